package triggers

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/crowsnest-dev/crowsnest/config"
)

func TestParseSubscriptions(t *testing.T) {
	tests := []struct {
		name    string
		ann     map[string]string
		want    []Subscription
		wantErr string
	}{
		{name: "trigger and service", ann: map[string]string{
			"notifications.argoproj.io/subscribe.on-deployed.slack": "deploys; ops ,",
			"other": "ignored",
		}, want: []Subscription{{Trigger: "on-deployed", Service: "slack", Recipients: []string{"deploys", "ops"}}}},
		{name: "default triggers and an empty recipient", ann: map[string]string{
			"notifications.argoproj.io/subscribe.slack":              "deploys",
			"notifications.argoproj.io/subscribe.on-deployed.github": "",
		}, want: []Subscription{
			{Trigger: "on-deployed", Service: "github"},
			{Service: "slack", Recipients: []string{"deploys"}},
		}},
		{name: "YAML annotation", ann: map[string]string{
			"notifications.argoproj.io/subscriptions": `
- trigger: [on-sync-failed, on-health-degraded]
  destinations:
    - service: slack
      recipients: [alerts]
    - service: email
      recipients: ops@example.com
- destinations:
    - service: webhook`,
		}, want: []Subscription{
			{Trigger: "on-sync-failed", Service: "slack", Recipients: []string{"alerts"}},
			{Trigger: "on-sync-failed", Service: "email", Recipients: []string{"ops@example.com"}},
			{Trigger: "on-health-degraded", Service: "slack", Recipients: []string{"alerts"}},
			{Trigger: "on-health-degraded", Service: "email", Recipients: []string{"ops@example.com"}},
			{Service: "webhook", Recipients: []string{}},
		}},
		{name: "too many segments", ann: map[string]string{"notifications.argoproj.io/subscribe.a.b.c": "x"},
			wantErr: "annotation notifications.argoproj.io/subscribe.a.b.c: want"},
		{name: "empty service", ann: map[string]string{"notifications.argoproj.io/subscribe.on-x.": "x"},
			wantErr: `annotation notifications.argoproj.io/subscribe.on-x.: invalid service name ""`},
		{name: "bad YAML", ann: map[string]string{"notifications.argoproj.io/subscriptions": "- trigger: [a\n"},
			wantErr: "annotation notifications.argoproj.io/subscriptions: not a YAML list"},
		{name: "no destinations", ann: map[string]string{"notifications.argoproj.io/subscriptions": "- trigger: on-x\n"},
			wantErr: "annotation notifications.argoproj.io/subscriptions: [0]: no destinations"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseSubscriptions(tt.ann)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for i := range got {
				if got[i].Recipients == nil && tt.want[i].Recipients != nil {
					got[i].Recipients = []string{}
				}
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("subscriptions (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDestinations(t *testing.T) {
	r, err := NewResolver(&config.Notifications{
		DefaultTriggers:        []string{"on-deployed", "on-sync-failed"},
		ServiceDefaultTriggers: map[string][]string{"email": {"on-sync-failed"}},
		Subscriptions: []config.Subscription{
			{Recipients: []string{"slack:payments"}, Selector: "team=payments"},
			{Recipients: []string{"webhook"}, Triggers: []string{"on-health-degraded"}},
			{Recipients: []string{"slack:other"}, Selector: "team=other"},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	appSubs, _ := ParseSubscriptions(map[string]string{
		"notifications.argoproj.io/subscribe.slack":             "deploys",
		"notifications.argoproj.io/subscribe.email":             "ops@example.com",
		"notifications.argoproj.io/subscribe.on-deployed.slack": "deploys;audit",
	})
	projSubs, _ := ParseSubscriptions(map[string]string{"notifications.argoproj.io/subscribe.on-health-degraded.slack": "oncall"})
	labels := map[string]string{"team": "payments"}
	tests := []struct {
		trigger string
		want    []Destination
	}{
		{"on-deployed", []Destination{{"slack", "audit"}, {"slack", "deploys"}, {"slack", "payments"}}},
		{"on-sync-failed", []Destination{{"email", "ops@example.com"}, {"slack", "deploys"}, {"slack", "payments"}}},
		{"on-health-degraded", []Destination{{"slack", "oncall"}, {"webhook", ""}}},
		{"on-created", nil},
	}
	got, err := r.DestinationsFor("on-deployed", labels,
		map[string]string{"notifications.argoproj.io/subscribe.on-deployed.slack": "a", "notifications.argoproj.io/subscribe.x.y.z": ""},
		map[string]string{"notifications.argoproj.io/subscribe.on-deployed.email": "b@example.com"})
	if err == nil || !strings.Contains(err.Error(), "annotation notifications.argoproj.io/subscribe.x.y.z") {
		t.Errorf("DestinationsFor error %v, want the malformed annotation named", err)
	}
	if diff := cmp.Diff([]Destination{{"email", "b@example.com"}, {"slack", "a"}, {"slack", "payments"}}, got); diff != "" {
		t.Errorf("DestinationsFor (-want +got):\n%s", diff)
	}
	for _, tt := range tests {
		t.Run(tt.trigger, func(t *testing.T) {
			got := r.Destinations(tt.trigger, labels, appSubs, projSubs)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("destinations (-want +got):\n%s", diff)
			}
		})
	}
}

// A global subscription without triggers takes defaultTriggers, never the
// service's defaultTriggers.<service>, as notifications-engine's
// Config.GetGlobalDestinations does; annotation subscriptions without a
// trigger take the service's list first.
func TestGlobalSubscriptionDefaultTriggers(t *testing.T) {
	r, err := NewResolver(&config.Notifications{
		DefaultTriggers:        []string{"on-deployed"},
		ServiceDefaultTriggers: map[string][]string{"email": {"on-sync-failed"}},
		Subscriptions:          []config.Subscription{{Recipients: []string{"email:global@example.com"}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	appSubs, _ := ParseSubscriptions(map[string]string{"notifications.argoproj.io/subscribe.email": "app@example.com"})
	for _, tt := range []struct {
		trigger string
		want    []Destination
	}{
		{"on-deployed", []Destination{{"email", "global@example.com"}}},
		{"on-sync-failed", []Destination{{"email", "app@example.com"}}},
	} {
		if diff := cmp.Diff(tt.want, r.Destinations(tt.trigger, nil, appSubs)); diff != "" {
			t.Errorf("%s destinations (-want +got):\n%s", tt.trigger, diff)
		}
	}
}
