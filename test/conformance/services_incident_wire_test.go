package conformance

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"
	_ "unsafe" // go:linkname, to reach go-pagerduty's HTTP client

	"github.com/PagerDuty/go-pagerduty"
	"github.com/google/go-cmp/cmp"
)

// opsgenieTemplate is Argo CD's documented Opsgenie template (visibleTo
// with the capitalised keys its docs use).
const opsgenieTemplate = `message: |
  [Argo CD] Application {{.app.metadata.name}} has a problem.
opsgenie:
  description: |
    Application: {{.app.metadata.name}}
    Health Status: {{.app.status.health.status}}
    Operation State Phase: {{.app.status.operationState.phase}}
    Sync Status: {{.app.status.sync.status}}
  priority: P1
  alias: "{{.app.metadata.name}}"
  note: Error from Argo CD!
  actions:
    - Restart
    - "{{.app.metadata.namespace}}"
  tags:
    - OverwriteQuietHours
    - Critical
  visibleTo:
    - Id: "{{.app.metadata.name}}-team"
      Type: "team"
    - Name: "rocket_team"
      Type: "team"
    - Username: "trinity@opsgenie.com"
      Type: "user"
  details:
    environment: production
    app: "{{.app.metadata.name}}"
  entity: Argo CD Application
  user: John Doe
`

// TestOpsgenieOnTheWire: apiUrl is a bare host as Argo CD's docs write
// it; one without "api" in its name (127.0.0.1:port) is called over http
// by both.
func TestOpsgenieOnTheWire(t *testing.T) {
	for name, tmpl := range map[string]string{
		"documented template": opsgenieTemplate,
		"message only":        "message: Application {{.app.metadata.name}} is {{.app.status.health.status}}\n",
		"description only":    "message: m\nopsgenie:\n  description: \"{{.app.metadata.name}}\"\n",
	} {
		t.Run(name, func(t *testing.T) {
			compareOnWire(t, wireCase{
				CM: map[string]string{
					"service.opsgenie":   "apiUrl: SINKHOST\napiKeys:\n  team-a: $opsgenie-key\n",
					"template.a-problem": tmpl,
				},
				Secret:  map[string][]byte{"opsgenie-key": []byte("og-key")},
				Service: "opsgenie", Template: "a-problem", Recipient: "team-a",
				App: wireApp("guestbook"),
				Answer: func(wireRequest) (int, string) {
					return http.StatusAccepted, `{"result":"Request will be processed","took":0.302,"requestId":"43a29c5c"}`
				},
				Headers: []string{"Authorization", "Content-Type", "Accept"},
			})
		})
	}
}

// pagerDutyDefaultClient is go-pagerduty's own HTTP client, which
// notifications-engine's `pagerduty` service cannot replace: the test
// points it at http.DefaultTransport, which Redirect sends to the sink.
// The engine's code runs unchanged; only where its requests go changes.
//
//go:linkname pagerDutyDefaultClient github.com/PagerDuty/go-pagerduty.defaultHTTPClient
var pagerDutyDefaultClient pagerduty.HTTPClient

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func TestPagerDutyOnTheWire(t *testing.T) {
	saved := pagerDutyDefaultClient
	pagerDutyDefaultClient = &http.Client{Transport: roundTripperFunc(func(r *http.Request) (*http.Response, error) {
		return http.DefaultTransport.RoundTrip(r)
	})}
	t.Cleanup(func() { pagerDutyDefaultClient = saved })
	for name, tmpl := range map[string]string{
		// Argo CD's documented template, priorityID spelled as there.
		"documented template": `message: Application {{.app.metadata.name}} is degraded.
pagerduty:
  title: "Application {{.app.metadata.name}}"
  urgency: "high"
  body: "Application {{.app.metadata.name}} is {{.app.status.health.status}}"
  priorityID: "P53ZZH5"
`,
		"title only": "message: m\npagerduty:\n  title: \"{{.app.metadata.name}} degraded\"\n",
	} {
		t.Run(name, func(t *testing.T) {
			compareOnWire(t, wireCase{
				CM: map[string]string{
					"service.pagerduty":     "token: $pagerdutyToken\nfrom: oncall@example.com\n",
					"template.app-degraded": tmpl,
				},
				Secret:  map[string][]byte{"pagerdutyToken": []byte("pd-token")},
				Service: "pagerduty", Template: "app-degraded", Recipient: "PSERVICE",
				App: wireApp("guestbook"), TLS: true, Redirect: true,
				Answer: func(wireRequest) (int, string) {
					return http.StatusCreated, `{"incident":{"id":"PT4KHLK","incident_number":1}}`
				},
				Headers: []string{"Authorization", "From", "Accept", "Content-Type"},
			})
		})
	}
}

func TestPagerDutyV2OnTheWire(t *testing.T) {
	for name, tmpl := range map[string]string{
		"every field": `message: Application {{.app.metadata.name}} is degraded.
pagerdutyv2:
  summary: "Application {{.app.metadata.name}} is {{.app.status.health.status}}"
  severity: critical
  source: "{{.app.metadata.name}}"
  component: "{{.app.metadata.namespace}}"
  group: apps
  class: deploy
  url: "{{.context.argocdUrl}}/applications/{{.app.metadata.name}}"
  dedupKey: "argocd-{{.app.metadata.name}}"
`,
		// Argo CD's documented template.
		"required fields": `message: Application {{.app.metadata.name}} is aborted.
pagerdutyv2:
  summary: "Application {{.app.metadata.name}} is aborted."
  severity: "critical"
  source: "{{.app.metadata.name}}"
`,
	} {
		t.Run(name, func(t *testing.T) {
			compareOnWire(t, wireCase{
				CM: map[string]string{
					"service.pagerdutyv2":   "serviceKeys:\n  my-service: $pagerduty-key-my-service\n",
					"template.app-degraded": tmpl,
				},
				Secret:  map[string][]byte{"pagerduty-key-my-service": []byte("routing-key")},
				Service: "pagerdutyv2", Template: "app-degraded", Recipient: "my-service",
				App: wireApp("guestbook"), TLS: true, Redirect: true,
				Answer: func(wireRequest) (int, string) {
					return http.StatusAccepted, `{"status":"success","message":"Event processed","dedup_key":"k"}`
				},
				Headers: []string{"Content-Type"},
			})
		})
	}
}

// TestAlertmanagerOnTheWire compares the alerts both send, except
// startsAt: each side stamps the time of its own render or send (the test
// checks it is a time within the test instead).
func TestAlertmanagerOnTheWire(t *testing.T) {
	for name, tmpl := range map[string]string{
		// Argo CD's documented template, less the repo.GetCommitMetadata calls.
		"documented template": `message: Application {{.app.metadata.name}} has been healthy.
alertmanager:
  labels:
    fault_priority: "P5"
    event_bucket: "deploy"
    event_status: "succeed"
    app: "{{.app.metadata.name}}"
  annotations:
    application: '<a href="{{.context.argocdUrl}}/applications/{{.app.metadata.name}}">{{.app.metadata.name}}</a>'
    health: "{{.app.status.health.status}}"
`,
		"alertname and git generatorURL": `message: m
alertmanager:
  labels:
    alertname: app-deployed
  generatorURL: "git@github.com:example/{{.app.metadata.name}}.git"
`,
	} {
		t.Run(name, func(t *testing.T) {
			start := time.Now()
			c := wireCase{
				CM: map[string]string{
					"service.alertmanager":  "targets:\n- SINKHOST\nbearerToken: $am-token\n",
					"template.app-deployed": tmpl,
				},
				Secret:  map[string][]byte{"am-token": []byte("am-token")},
				Service: "alertmanager", Template: "app-deployed",
				App:     wireApp("guestbook"),
				Headers: []string{"Authorization", "Content-Type"},
			}
			compareOnWireExcept(t, c, func(body any) any { return alertsWithoutStartsAt(t, body, start) })
		})
	}
}

// alertsWithoutStartsAt checks each alert's startsAt is a time since
// start and removes it.
func alertsWithoutStartsAt(t *testing.T, body any, start time.Time) any {
	t.Helper()
	alerts, _ := body.([]any)
	if len(alerts) == 0 {
		t.Errorf("body %v: want an array of alerts", body)
	}
	for _, a := range alerts {
		m, _ := a.(map[string]any)
		s, _ := m["startsAt"].(string)
		at, err := time.Parse(time.RFC3339Nano, s)
		if err != nil || at.Before(start) || at.After(time.Now()) {
			t.Errorf("startsAt %q: not a time within the test (%v)", s, err)
		}
		delete(m, "startsAt")
	}
	return body
}

// compareOnWireExcept is compareOnWire for a JSON body with a field that
// each side fills with its own clock: normalise checks that field on each
// body and removes it before the bodies are compared.
func compareOnWireExcept(t *testing.T, c wireCase, normalise func(body any) any) {
	t.Helper()
	want, got := sendBothSides(t, c)
	if len(want) == 0 {
		t.Fatal("notifications-engine sent nothing: the case tests nothing")
	}
	if len(want) != len(got) {
		t.Fatalf("notifications-engine made %d requests, crowsnest %d", len(want), len(got))
	}
	for i := range want {
		w, g := want[i], got[i]
		if w.Method != g.Method || w.Path != g.Path || w.Query != g.Query {
			t.Errorf("request %d: notifications-engine %s %s?%s, crowsnest %s %s?%s", i, w.Method, w.Path, w.Query, g.Method, g.Path, g.Query)
		}
		for _, h := range c.Headers {
			if w.Header.Get(h) != g.Header.Get(h) {
				t.Errorf("request %d: header %s: notifications-engine %q, crowsnest %q", i, h, w.Header.Get(h), g.Header.Get(h))
			}
		}
		var wb, gb any
		if err := json.Unmarshal([]byte(w.Body), &wb); err != nil {
			t.Fatalf("notifications-engine body %s: %v", w.Body, err)
		}
		if err := json.Unmarshal([]byte(g.Body), &gb); err != nil {
			t.Fatalf("crowsnest body %s: %v", g.Body, err)
		}
		if d := cmp.Diff(normalise(wb), normalise(gb)); d != "" {
			t.Errorf("request %d body (-notifications-engine +crowsnest):\n%s", i, d)
		}
	}
}

// TestPushoverOnTheWire: the engine's client then reports the sink's
// answer lacks Pushover's X-Limit-App-* headers; the request is what is
// compared.
func TestPushoverOnTheWire(t *testing.T) {
	compareOnWire(t, wireCase{
		CM: map[string]string{
			"service.pushover":      "token: $pushover-token\n",
			"template.app-deployed": "message: Application {{.app.metadata.name}} is now running a new version & is {{.app.status.health.status}}.\n",
		},
		Secret:  map[string][]byte{"pushover-token": []byte("azGDORePK8gMaC0QOYAMyEEuzJnyUi")},
		Service: "pushover", Template: "app-deployed", Recipient: "uQiRzpo4DXghDmr9QzzfQu27cmVRsG",
		App: wireApp("guestbook"), TLS: true, Redirect: true,
		Answer: func(wireRequest) (int, string) {
			return http.StatusOK, `{"status":1,"request":"647d2300-702c-4b38-8b2f-d56326ae460b"}`
		},
		Headers: []string{"Content-Type"},
	})
}

// TestNewrelicOnTheWire sets changelog and user: their defaults call
// repo.GetCommitMetadata, which the engine side has no repository for.
func TestNewrelicOnTheWire(t *testing.T) {
	for name, block := range map[string]string{
		"defaults for revision and description": "newrelic:\n  changelog: \"sync of {{.app.metadata.name}}\"\n  user: argocd\n",
		"every field":                           "newrelic:\n  revision: \"{{.app.status.sync.revision}}\"\n  changelog: c\n  description: \"{{.app.metadata.name}} deployed\"\n  user: u\n",
	} {
		t.Run(name, func(t *testing.T) {
			compareOnWire(t, wireCase{
				CM: map[string]string{
					"service.newrelic":      "apiURL: SINK/\napiKey: $newrelic-apiKey\n",
					"template.app-deployed": "message: Application {{.app.metadata.name}} has successfully deployed.\n" + block,
				},
				Secret:  map[string][]byte{"newrelic-apiKey": []byte("NRAK-key")},
				Service: "newrelic", Template: "app-deployed", Recipient: "987654",
				App: wireApp("guestbook"),
				Answer: func(wireRequest) (int, string) {
					return http.StatusCreated, `{"deployment":{"id":1234}}`
				},
				Headers: []string{"X-Api-Key", "Content-Type"},
			})
		})
	}
}

// TestGrafanaOnTheWire compares the annotation except its time, which
// each side takes from its own clock (checked to be whole seconds within
// the test).
func TestGrafanaOnTheWire(t *testing.T) {
	for name, recipient := range map[string]string{"tags": "argocd|deploy", "no recipient": ""} {
		t.Run(name, func(t *testing.T) {
			start := time.Now().Unix() * 1000
			compareOnWireExcept(t, wireCase{
				CM: map[string]string{
					"service.grafana":       "apiUrl: SINK/api\napiKey: $grafana-api-key\n",
					"template.app-deployed": "message: Application {{.app.metadata.name}} is now running a new version.\n",
				},
				Secret:  map[string][]byte{"grafana-api-key": []byte("glsa_key")},
				Service: "grafana", Template: "app-deployed", Recipient: recipient,
				App:     wireApp("guestbook"),
				Answer:  func(wireRequest) (int, string) { return http.StatusOK, `{"message":"Annotation added","id":1}` },
				Headers: []string{"Authorization", "Content-Type"},
			}, func(body any) any {
				m, _ := body.(map[string]any)
				ms, _ := m["time"].(float64)
				if int64(ms) < start || int64(ms) > time.Now().Unix()*1000 || int64(ms)%1000 != 0 {
					t.Errorf("time %v: not whole seconds within the test", m["time"])
				}
				delete(m, "time")
				return m
			})
		})
	}
}
