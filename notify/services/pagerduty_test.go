package services_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/crowsnest-dev/crowsnest/notify/outbox"
	"github.com/crowsnest-dev/crowsnest/notify/services/internal/svctest"
)

const pagerDutyToken = "pd-secret-rest-token"

// pagerDutyCM is Argo CD's documented PagerDuty example (priorityID
// spelled as its docs spell it).
func pagerDutyCM() map[string]string {
	return map[string]string{
		"service.pagerduty": "token: $pagerdutyToken\nfrom: oncall@example.com\nserviceID: PDEFAULT\n",
		"template.app-degraded": `message: Application {{.app.metadata.name}} is degraded.
pagerduty:
  title: "Application {{.app.metadata.name}}"
  urgency: "high"
  body: "Application {{.app.metadata.name}} is {{.app.status.health.status}}"
  priorityID: "P53ZZH5"
`,
		"template.no-block": "message: hello\n",
	}
}

func pagerDutySecret() map[string][]byte {
	return map[string][]byte{"pagerdutyToken": []byte(pagerDutyToken)}
}

func TestPagerDutyThroughOutbox(t *testing.T) {
	s := svctest.NewSink(t, true, svctest.Answer{Status: http.StatusCreated, Body: `{"incident":{"id":"PT4KHLK","incident_number":1}}`})
	rec := svctest.Deliver(t, svctest.Delivery{
		CM: pagerDutyCM(), Secret: pagerDutySecret(), Transport: svctest.Redirect(s),
		Service: "pagerduty", Template: "app-degraded", Recipient: "PSERVICE", App: svctest.App("guestbook"),
	})
	if rec.State != outbox.StateDelivered || rec.Receipt.ID != "PT4KHLK" {
		t.Fatalf("record: state %s receipt %+v error %q", rec.State, rec.Receipt, rec.LastError)
	}
	reqs := s.Requests()
	if len(reqs) != 1 {
		t.Fatalf("got %d requests, want 1", len(reqs))
	}
	r := reqs[0]
	if r.Method != http.MethodPost || r.Path != "/incidents" {
		t.Errorf("request %s %s, want POST /incidents", r.Method, r.Path)
	}
	for h, want := range map[string]string{
		"Authorization": "Token token=" + pagerDutyToken,
		"From":          "oncall@example.com",
		"Accept":        "application/vnd.pagerduty+json;version=2",
		"Content-Type":  "application/json",
	} {
		if got := r.Header.Get(h); got != want {
			t.Errorf("%s = %q, want %q", h, got, want)
		}
	}
	var body map[string]any
	if err := json.Unmarshal([]byte(r.Body), &body); err != nil {
		t.Fatalf("body %s: %v", r.Body, err)
	}
	want := map[string]any{"incident": map[string]any{
		"type": "incident", "title": "Application guestbook", "urgency": "high",
		"service":  map[string]any{"id": "PSERVICE", "type": "service_reference"},
		"priority": map[string]any{"id": "P53ZZH5", "type": "priority"},
		"body":     map[string]any{"type": "incident_details\t", "details": "Application guestbook is Healthy"},
	}}
	if d := cmp.Diff(want, body); d != "" {
		t.Errorf("body (-want +got):\n%s", d)
	}
}

// TestPagerDutyServiceIDSetting: a subscription without a recipient
// creates the incident on the serviceID setting's service.
func TestPagerDutyServiceIDSetting(t *testing.T) {
	s := svctest.NewSink(t, true, svctest.Answer{Status: http.StatusCreated, Body: `{"incident":{"id":"P2"}}`})
	rec := svctest.Deliver(t, svctest.Delivery{
		CM: pagerDutyCM(), Secret: pagerDutySecret(), Transport: svctest.Redirect(s),
		Service: "pagerduty", Template: "app-degraded", App: svctest.App("guestbook"),
	})
	if rec.State != outbox.StateDelivered {
		t.Fatalf("state %s: %s", rec.State, rec.LastError)
	}
	svctest.MustContain(t, "body", s.Requests()[0].Body, `"service":{"id":"PDEFAULT","type":"service_reference"}`)
}

func TestPagerDutyWithoutBlockDeadLetters(t *testing.T) {
	s := svctest.NewSink(t, true)
	rec := svctest.Deliver(t, svctest.Delivery{
		CM: pagerDutyCM(), Secret: pagerDutySecret(), Transport: svctest.Redirect(s),
		Service: "pagerduty", Template: "no-block", Recipient: "PSERVICE", App: svctest.App("guestbook"),
	})
	if rec.State != outbox.StateDead || len(s.Requests()) != 0 {
		t.Fatalf("state %s after %d requests", rec.State, len(s.Requests()))
	}
	svctest.MustContain(t, "last error", rec.LastError, "no pagerduty block")
}

func TestPagerDutyStatuses(t *testing.T) {
	checkIncidentStatuses(t, incidentStatusCase{
		tls:     true,
		ok:      svctest.Answer{Status: http.StatusCreated, Body: `{"incident":{"id":"P3"}}`},
		secrets: []string{pagerDutyToken},
		delivery: func(s *svctest.Sink) svctest.Delivery {
			return svctest.Delivery{CM: pagerDutyCM(), Secret: pagerDutySecret(), Transport: svctest.Redirect(s),
				Service: "pagerduty", Template: "app-degraded", Recipient: "PSERVICE", App: svctest.App("a")}
		},
	})
}
