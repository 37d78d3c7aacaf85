package services_test

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"net"
	"net/http"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/crowsnest-dev/crowsnest/notify"
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

// redirectTo sends every request, whatever its host, to the TLS sink s:
// for services whose API host is fixed (api.pagerduty.com).
func redirectTo(s *sink) http.RoundTripper {
	addr := s.Listener.Addr().String()
	return &http.Transport{
		DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, network, addr)
		},
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // the test sink's own certificate
	}
}

func TestPagerDutyThroughOutbox(t *testing.T) {
	s := newSink(t, true, answer{Status: http.StatusCreated, Body: `{"incident":{"id":"PT4KHLK","incident_number":1}}`})
	rec := deliver(t, delivery{
		CM: pagerDutyCM(), Secret: pagerDutySecret(), Transport: redirectTo(s),
		Service: "pagerduty", Template: "app-degraded", Recipient: "PSERVICE", App: testApp("guestbook"),
	})
	if rec.State != notify.StateDelivered || rec.Receipt.ID != "PT4KHLK" {
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
	s := newSink(t, true, answer{Status: http.StatusCreated, Body: `{"incident":{"id":"P2"}}`})
	rec := deliver(t, delivery{
		CM: pagerDutyCM(), Secret: pagerDutySecret(), Transport: redirectTo(s),
		Service: "pagerduty", Template: "app-degraded", App: testApp("guestbook"),
	})
	if rec.State != notify.StateDelivered {
		t.Fatalf("state %s: %s", rec.State, rec.LastError)
	}
	mustContain(t, "body", s.Requests()[0].Body, `"service":{"id":"PDEFAULT","type":"service_reference"}`)
}

func TestPagerDutyWithoutBlockDeadLetters(t *testing.T) {
	s := newSink(t, true)
	rec := deliver(t, delivery{
		CM: pagerDutyCM(), Secret: pagerDutySecret(), Transport: redirectTo(s),
		Service: "pagerduty", Template: "no-block", Recipient: "PSERVICE", App: testApp("guestbook"),
	})
	if rec.State != notify.StateDead || len(s.Requests()) != 0 {
		t.Fatalf("state %s after %d requests", rec.State, len(s.Requests()))
	}
	mustContain(t, "last error", rec.LastError, "no pagerduty block")
}

func TestPagerDutyStatuses(t *testing.T) {
	checkIncidentStatuses(t, incidentStatusCase{
		tls:     true,
		ok:      answer{Status: http.StatusCreated, Body: `{"incident":{"id":"P3"}}`},
		secrets: []string{pagerDutyToken},
		delivery: func(s *sink) delivery {
			return delivery{CM: pagerDutyCM(), Secret: pagerDutySecret(), Transport: redirectTo(s),
				Service: "pagerduty", Template: "app-degraded", Recipient: "PSERVICE", App: testApp("a")}
		},
	})
}
