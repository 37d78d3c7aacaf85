package triggers

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/crowsnest-dev/crowsnest/config"
)

var fixedNow = time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)

func TestCatalogOverFixtures(t *testing.T) {
	s := catalogSet(t)
	tests := []struct {
		fixture string
		want    []string // triggers whose conditions are true
	}{
		{"created", []string{"on-created"}},
		{"running", []string{"on-created", "on-sync-running"}},
		{"succeeded", []string{"on-created", "on-sync-succeeded"}},
		{"healthy", []string{"on-created", "on-deployed", "on-sync-succeeded"}},
		{"degraded", []string{"on-created", "on-health-degraded", "on-sync-succeeded"}},
		{"failed", []string{"on-created", "on-sync-failed"}},
		{"error", []string{"on-created", "on-sync-failed"}},
		{"unknown", []string{"on-created", "on-sync-status-unknown"}},
		{"deleted", []string{"on-created", "on-deleted"}},
	}
	for _, tt := range tests {
		t.Run(tt.fixture, func(t *testing.T) {
			env := NewEnv(loadApp(t, tt.fixture), nil, nil, nil, fixedNow)
			got := []string{}
			for _, tr := range appTriggers(s) {
				for _, r := range Evaluate(tr, env) {
					if r.Err != nil {
						t.Errorf("%s: %v", tr.Name, r.Err)
					}
					if r.Triggered {
						got = append(got, tr.Name)
					}
				}
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("triggered (-want +got):\n%s", diff)
			}
		})
	}
}

func TestCatalogEventTriggers(t *testing.T) {
	s := catalogSet(t)
	app := loadApp(t, "healthy")
	for _, typ := range []string{EventImageUpdated, EventImageUpdateHeld, EventImageUpdateFailed, EventSyncWindowOpened, EventSyncWindowClosed,
		EventPullRequestOpened, EventPullRequestUpdated, EventPullRequestMerged, EventPullRequestClosed} {
		t.Run(typ, func(t *testing.T) {
			ev := (&Event{Type: typ, ID: "ev-1", Image: "ghcr.io/example/shop", From: "1.0.0", To: "1.1.0"}).Map()
			env := NewEnv(app, app, ev, nil, fixedNow)
			var got []string
			for _, name := range sortedNames(s.Triggers) {
				tr := s.Triggers[name]
				for _, r := range Evaluate(tr, env) {
					if r.Err != nil {
						t.Errorf("%s: %v", name, r.Err)
					}
					if r.Triggered && tr.OnEvent {
						got = append(got, name+" once per "+r.OncePer)
					}
				}
			}
			if diff := cmp.Diff([]string{"on-" + typ + " once per ev-1"}, got); diff != "" {
				t.Errorf("event triggers (-want +got):\n%s", diff)
			}
		})
	}
}

func TestCatalogTriggersAndTemplates(t *testing.T) {
	cat, err := Catalog()
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"on-created", "on-deleted", "on-deployed", "on-health-degraded", "on-image-update-failed",
		"on-image-update-held", "on-image-updated", "on-pr-closed", "on-pr-merged", "on-pr-opened", "on-pr-updated",
		"on-sync-failed", "on-sync-running",
		"on-sync-status-unknown", "on-sync-succeeded", "on-sync-window-closed", "on-sync-window-opened",
	}
	if diff := cmp.Diff(want, CatalogTriggers()); diff != "" {
		t.Errorf("catalog triggers (-want +got):\n%s", diff)
	}
	for name, tmpl := range cat.Templates {
		if tmpl.Message == "" || tmpl.Slack == nil || tmpl.Email == nil || tmpl.Webhook[config.AnyWebhook].Body == "" {
			t.Errorf("template %s lacks a message, slack, email or webhook block", name)
		}
	}
	if len(cat.Ignored) > 0 {
		t.Errorf("catalog holds keys crowsnest ignores: %v", cat.Ignored)
	}
}

// TestTransitions drives an Application through Running -> Succeeded ->
// Healthy -> Degraded and back: exactly one send per transition.
func TestTransitions(t *testing.T) {
	s := catalogSet(t)
	steps := []struct {
		fixture string
		want    []string
	}{
		{"created", []string{}}, // first sight: on-created is the baseline
		{"running", []string{"on-sync-running"}},
		{"running", []string{}}, // a resync of the same state
		{"succeeded", []string{"on-sync-succeeded"}},
		{"healthy", []string{"on-deployed"}},
		{"healthy", []string{}},
		{"degraded", []string{"on-health-degraded"}},
		{"healthy", []string{}},                      // same revision: on-deployed fired once for it
		{"degraded", []string{"on-health-degraded"}}, // re-armed by Healthy
		{"running", []string{"on-sync-running"}},
		{"deployed-next", []string{"on-deployed", "on-sync-succeeded"}},
		{"failed", []string{"on-sync-failed"}},
		{"unknown", []string{"on-sync-status-unknown"}},
		{"deleted", []string{"on-deleted"}},
	}
	var st State
	var prev map[string]any
	opt := StepOptions{App: "6b1f8f3e-1c1e-4a52-9a5e-6d3e2b1c0a01", Baseline: true}
	for i, step := range steps {
		app := loadApp(t, step.fixture)
		var sends []Send
		st, sends = observe(s, st, app, prev, opt)
		if diff := cmp.Diff(step.want, sentTriggers(sends)); diff != "" {
			t.Errorf("step %d (%s): sends (-want +got):\n%s", i, step.fixture, diff)
		}
		prev = app
	}
	if len(st.Fired) > 10 {
		t.Errorf("state grew to %d keys: %v", len(st.Fired), st.Fired)
	}
}
