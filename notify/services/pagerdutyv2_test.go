package services_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/crowsnest-dev/crowsnest/notify/outbox"
	"github.com/crowsnest-dev/crowsnest/notify/services/internal/svctest"
)

const pagerDutyRoutingKey = "pdv2-secret-routing-key"

func pagerDutyV2CM() map[string]string {
	return map[string]string{
		"service.pagerdutyv2": "serviceKeys:\n  my-service: $pagerduty-key-my-service\n",
		"template.app-degraded": `message: Application {{.app.metadata.name}} is degraded.
pagerdutyv2:
  summary: "Application {{.app.metadata.name}} is {{.app.status.health.status}}"
  severity: critical
  source: "{{.app.metadata.name}}"
  component: "{{.app.metadata.namespace}}"
  group: apps
  class: deploy
  url: "https://argocd.example.com/applications/{{.app.metadata.name}}"
  dedupKey: "argocd-{{.app.metadata.name}}"
`,
		"template.app-healthy": `message: Application {{.app.metadata.name}} is healthy.
pagerdutyv2:
  action: resolve
  dedupKey: "argocd-{{.app.metadata.name}}"
`,
	}
}

func pagerDutyV2Secret() map[string][]byte {
	return map[string][]byte{"pagerduty-key-my-service": []byte(pagerDutyRoutingKey)}
}

const pagerDutyV2Accepted = `{"status":"success","message":"Event processed","dedup_key":"argocd-guestbook"}`

func TestPagerDutyV2ThroughOutbox(t *testing.T) {
	s := svctest.NewSink(t, true, svctest.Answer{Status: http.StatusAccepted, Body: pagerDutyV2Accepted})
	rec := svctest.Deliver(t, svctest.Delivery{
		CM: pagerDutyV2CM(), Secret: pagerDutyV2Secret(), Transport: svctest.Redirect(s),
		Service: "pagerdutyv2", Template: "app-degraded", Recipient: "my-service", App: svctest.App("guestbook"),
	})
	if rec.State != outbox.StateDelivered || rec.Receipt.ID != "argocd-guestbook" {
		t.Fatalf("record: state %s receipt %+v error %q", rec.State, rec.Receipt, rec.LastError)
	}
	reqs := s.Requests()
	if len(reqs) != 1 {
		t.Fatalf("got %d requests, want 1", len(reqs))
	}
	r := reqs[0]
	if r.Method != http.MethodPost || r.Path != "/v2/enqueue" || r.Header.Get("Content-Type") != "application/json" {
		t.Errorf("request %s %s (%s), want POST /v2/enqueue (application/json)", r.Method, r.Path, r.Header.Get("Content-Type"))
	}
	var body map[string]any
	if err := json.Unmarshal([]byte(r.Body), &body); err != nil {
		t.Fatalf("body %s: %v", r.Body, err)
	}
	want := map[string]any{
		"routing_key": pagerDutyRoutingKey, "event_action": "trigger", "dedup_key": "argocd-guestbook",
		"client": "ArgoCD", "client_url": "https://argocd.example.com/applications/guestbook",
		"payload": map[string]any{
			"summary": "Application guestbook is Healthy", "severity": "critical", "source": "guestbook",
			"component": "argocd", "group": "apps", "class": "deploy",
		},
	}
	if d := cmp.Diff(want, body); d != "" {
		t.Errorf("body (-want +got):\n%s", d)
	}
}

func TestPagerDutyV2Resolve(t *testing.T) {
	s := svctest.NewSink(t, true, svctest.Answer{Status: http.StatusAccepted, Body: pagerDutyV2Accepted})
	rec := svctest.Deliver(t, svctest.Delivery{
		CM: pagerDutyV2CM(), Secret: pagerDutyV2Secret(), Transport: svctest.Redirect(s),
		Service: "pagerdutyv2", Template: "app-healthy", Recipient: "my-service", App: svctest.App("guestbook"),
	})
	if rec.State != outbox.StateDelivered {
		t.Fatalf("state %s: %s", rec.State, rec.LastError)
	}
	want := `{"routing_key":"` + pagerDutyRoutingKey + `","event_action":"resolve","dedup_key":"argocd-guestbook"}`
	if d := cmp.Diff(want, s.Requests()[0].Body); d != "" {
		t.Errorf("body (-want +got):\n%s", d)
	}
}

func TestPagerDutyV2UnknownRecipientDeadLetters(t *testing.T) {
	s := svctest.NewSink(t, true)
	rec := svctest.Deliver(t, svctest.Delivery{
		CM: pagerDutyV2CM(), Secret: pagerDutyV2Secret(), Transport: svctest.Redirect(s),
		Service: "pagerdutyv2", Template: "app-degraded", Recipient: "other", App: svctest.App("guestbook"),
	})
	if rec.State != outbox.StateDead || len(s.Requests()) != 0 {
		t.Fatalf("state %s after %d requests", rec.State, len(s.Requests()))
	}
	svctest.MustContain(t, "last error", rec.LastError, `no routing key configured for recipient "other"`)
}

func TestPagerDutyV2Statuses(t *testing.T) {
	checkIncidentStatuses(t, incidentStatusCase{
		tls:     true,
		ok:      svctest.Answer{Status: http.StatusAccepted, Body: pagerDutyV2Accepted},
		secrets: []string{pagerDutyRoutingKey},
		delivery: func(s *svctest.Sink) svctest.Delivery {
			return svctest.Delivery{CM: pagerDutyV2CM(), Secret: pagerDutyV2Secret(), Transport: svctest.Redirect(s),
				Service: "pagerdutyv2", Template: "app-degraded", Recipient: "my-service", App: svctest.App("a")}
		},
	})
}
