package services_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/crowsnest-dev/crowsnest/config/servicetypes"
	"github.com/crowsnest-dev/crowsnest/notify/outbox"
	"github.com/crowsnest-dev/crowsnest/notify/services"
	"github.com/crowsnest-dev/crowsnest/notify/services/internal/svctest"
)

const opsgenieKey = "og-secret-integration-key"

// opsgenieCM is Argo CD's documented Opsgenie example (visibleTo with
// capitalised keys, as the docs write them) against apiURL.
func opsgenieCM(apiURL string) map[string]string {
	return map[string]string{
		"service.opsgenie": "apiUrl: " + apiURL + "\napiKeys:\n  team-a: $opsgenie-key\n",
		"template.app-problem": `message: |
  [Argo CD] Application {{.app.metadata.name}} has a problem.
opsgenie:
  description: |
    Application: {{.app.metadata.name}}
    Health Status: {{.app.status.health.status}}
  priority: P1
  alias: "{{.app.metadata.name}}"
  note: Error from Argo CD!
  actions: [Restart, "{{.app.metadata.namespace}}"]
  tags: [Critical]
  visibleTo:
    - Id: "{{.app.metadata.name}}-team"
      Type: team
    - Username: trinity@opsgenie.com
      Type: user
  details:
    environment: production
    app: "{{.app.metadata.name}}"
  entity: Argo CD Application
  user: John Doe
`,
		"template.app-recovered": `message: recovered
opsgenie:
  action: close
  alias: "{{.app.metadata.name}}"
  note: "{{.app.metadata.name}} is {{.app.status.health.status}}"
`,
	}
}

func opsgenieSecret() map[string][]byte {
	return map[string][]byte{"opsgenie-key": []byte(opsgenieKey)}
}

func TestOpsgenieThroughOutbox(t *testing.T) {
	s := svctest.NewSink(t, false, svctest.Answer{Status: http.StatusAccepted, Body: `{"result":"Request will be processed","took":0.3,"requestId":"req-1"}`})
	rec := svctest.Deliver(t, svctest.Delivery{
		CM: opsgenieCM(s.URL), Secret: opsgenieSecret(),
		Service: "opsgenie", Template: "app-problem", Recipient: "team-a", App: svctest.App("guestbook"),
	})
	if rec.State != outbox.StateDelivered || rec.Receipt.ID != "req-1" {
		t.Fatalf("record: state %s receipt %+v error %q", rec.State, rec.Receipt, rec.LastError)
	}
	reqs := s.Requests()
	if len(reqs) != 1 {
		t.Fatalf("got %d requests, want 1", len(reqs))
	}
	r := reqs[0]
	if r.Method != http.MethodPost || r.Path != "/v2/alerts" {
		t.Errorf("request %s %s, want POST /v2/alerts", r.Method, r.Path)
	}
	if got := r.Header.Get("Authorization"); got != "GenieKey "+opsgenieKey {
		t.Errorf("Authorization = %q", got)
	}
	var body map[string]any
	if err := json.Unmarshal([]byte(r.Body), &body); err != nil {
		t.Fatalf("body %s: %v", r.Body, err)
	}
	want := map[string]any{
		"message":     "[Argo CD] Application guestbook has a problem.\n",
		"description": "Application: guestbook\nHealth Status: Healthy\n",
		"priority":    "P1", "alias": "guestbook", "note": "Error from Argo CD!",
		"actions": []any{"Restart", "argocd"}, "tags": []any{"Critical"},
		"details": map[string]any{"environment": "production", "app": "guestbook"},
		"entity":  "Argo CD Application", "user": "John Doe", "source": "Argo CD",
		"responders": []any{map[string]any{"type": "team", "id": "team-a", "username": ""}},
		"visibleTo": []any{
			map[string]any{"type": "team", "id": "guestbook-team", "username": ""},
			map[string]any{"type": "user", "username": "trinity@opsgenie.com"},
		},
	}
	if d := cmp.Diff(want, body); d != "" {
		t.Errorf("body (-want +got):\n%s", d)
	}
}

func TestOpsgenieCloseByAlias(t *testing.T) {
	s := svctest.NewSink(t, false, svctest.Answer{Status: http.StatusAccepted, Body: `{"requestId":"req-2"}`})
	rec := svctest.Deliver(t, svctest.Delivery{
		CM: opsgenieCM(s.URL), Secret: opsgenieSecret(),
		Service: "opsgenie", Template: "app-recovered", Recipient: "team-a", App: svctest.App("guestbook"),
	})
	if rec.State != outbox.StateDelivered {
		t.Fatalf("state %s: %s", rec.State, rec.LastError)
	}
	r := s.Requests()[0]
	if r.Path != "/v2/alerts/guestbook/close" || r.Query != "identifierType=alias" {
		t.Errorf("request %s?%s", r.Path, r.Query)
	}
	if d := cmp.Diff(`{"source":"Argo CD","note":"guestbook is Healthy"}`, r.Body); d != "" {
		t.Errorf("body (-want +got):\n%s", d)
	}
}

// TestOpsgenieBareHost: apiUrl as Argo CD's docs write it, a host without
// scheme; one without "api" in its name is called over http, as the
// Opsgenie SDK does.
func TestOpsgenieBareHost(t *testing.T) {
	s := svctest.NewSink(t, false, svctest.Answer{Status: http.StatusAccepted, Body: `{"requestId":"req-3"}`})
	rec := svctest.Deliver(t, svctest.Delivery{
		CM: opsgenieCM(strings.TrimPrefix(s.URL, "http://")), Secret: opsgenieSecret(),
		Service: "opsgenie", Template: "app-problem", Recipient: "team-a", App: svctest.App("guestbook"),
	})
	if rec.State != outbox.StateDelivered || len(s.Requests()) != 1 {
		t.Fatalf("state %s after %d requests: %s", rec.State, len(s.Requests()), rec.LastError)
	}
}

func TestOpsgenieUnknownTeamDeadLetters(t *testing.T) {
	s := svctest.NewSink(t, false)
	rec := svctest.Deliver(t, svctest.Delivery{
		CM: opsgenieCM(s.URL), Secret: opsgenieSecret(),
		Service: "opsgenie", Template: "app-problem", Recipient: "team-b", App: svctest.App("guestbook"),
	})
	if rec.State != outbox.StateDead || len(s.Requests()) != 0 {
		t.Fatalf("state %s after %d requests", rec.State, len(s.Requests()))
	}
	svctest.MustContain(t, "last error", rec.LastError, `no API key configured for recipient "team-b"`)
}

func TestOpsgenieValidate(t *testing.T) {
	k, _ := services.Lookup("opsgenie")
	for _, tc := range []struct {
		name string
		s    servicetypes.OpsgenieSettings
		want string
	}{
		{name: "default host", s: servicetypes.OpsgenieSettings{APIKeys: map[string]string{"t": "k"}}},
		{name: "eu host", s: servicetypes.OpsgenieSettings{APIURL: "api.eu.opsgenie.com", APIKeys: map[string]string{"t": "k"}}},
		{name: "url", s: servicetypes.OpsgenieSettings{APIURL: "https://api.eu.opsgenie.com/", APIKeys: map[string]string{"t": "k"}}},
		{name: "no keys", s: servicetypes.OpsgenieSettings{}, want: "apiKeys: required"},
		{name: "bad host", s: servicetypes.OpsgenieSettings{APIURL: "api.opsgenie.com/v2", APIKeys: map[string]string{"t": "k"}}, want: "apiUrl: want a host"},
		{name: "bad url", s: servicetypes.OpsgenieSettings{APIURL: "ftp://api.opsgenie.com", APIKeys: map[string]string{"t": "k"}}, want: "apiUrl: want an http"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := k.Type.Validate(&tc.s)
			if (err == nil) != (tc.want == "") || (err != nil && !strings.Contains(err.Error(), tc.want)) {
				t.Fatalf("Validate = %v, want %q", err, tc.want)
			}
		})
	}
}

func TestOpsgenieStatuses(t *testing.T) {
	checkIncidentStatuses(t, incidentStatusCase{
		ok:      svctest.Answer{Status: http.StatusAccepted, Body: `{"requestId":"r"}`},
		secrets: []string{opsgenieKey},
		delivery: func(s *svctest.Sink) svctest.Delivery {
			return svctest.Delivery{CM: opsgenieCM(s.URL), Secret: opsgenieSecret(), Service: "opsgenie",
				Template: "app-problem", Recipient: "team-a", App: svctest.App("a")}
		},
	})
}

// incidentStatusCase is a service's delivery checked against its API's failure
// answers.
type incidentStatusCase struct {
	// tls makes the sink HTTPS.
	tls bool
	// ok is the API's success answer.
	ok svctest.Answer
	// delivery builds the delivery against the sink.
	delivery func(s *svctest.Sink) svctest.Delivery
	// secrets must not appear in the last error.
	secrets []string
}

// checkIncidentStatuses checks the outbox's handling of a service's answers: 429
// with Retry-After waits then delivers, 5xx is retried, 4xx is
// dead-lettered at once with the API's answer and without secrets.
func checkIncidentStatuses(t *testing.T, c incidentStatusCase) {
	t.Helper()
	t.Run("429 waits Retry-After then delivers", func(t *testing.T) {
		s := svctest.NewSink(t, c.tls, svctest.Answer{Status: http.StatusTooManyRequests, Header: map[string]string{"Retry-After": "0"}}, c.ok)
		d := c.delivery(s)
		d.MaxAttempts = 1
		rec := svctest.Deliver(t, d)
		if rec.State != outbox.StateDelivered || len(s.Requests()) != 2 {
			t.Fatalf("state %s after %d requests: %s", rec.State, len(s.Requests()), rec.LastError)
		}
	})
	t.Run("5xx retried", func(t *testing.T) {
		s := svctest.NewSink(t, c.tls, svctest.Answer{Status: http.StatusServiceUnavailable}, c.ok)
		rec := svctest.Deliver(t, c.delivery(s))
		if rec.State != outbox.StateDelivered || rec.Attempts != 2 {
			t.Fatalf("state %s attempts %d: %s", rec.State, rec.Attempts, rec.LastError)
		}
	})
	t.Run("4xx dead-lettered at once without secrets", func(t *testing.T) {
		s := svctest.NewSink(t, c.tls, svctest.Answer{Status: http.StatusUnauthorized, Body: `{"message":"invalid key"}`})
		rec := svctest.Deliver(t, c.delivery(s))
		if rec.State != outbox.StateDead || rec.Attempts != 1 || len(s.Requests()) != 1 {
			t.Fatalf("state %s attempts %d requests %d", rec.State, rec.Attempts, len(s.Requests()))
		}
		svctest.MustContain(t, "last error", rec.LastError, "401", "invalid key")
		svctest.MustNotContain(t, "last error", rec.LastError, c.secrets...)
	})
}
