package services_test

import (
	"net/http"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/crowsnest-dev/crowsnest/notify/outbox"
	"github.com/crowsnest-dev/crowsnest/notify/services/internal/svctest"
)

const newrelicKey = "NRAK-secret-user-key"

func newrelicCM(apiURL string) map[string]string {
	return map[string]string{
		"service.newrelic": "apiURL: " + apiURL + "\napiKey: $newrelic-apiKey\n",
		// changelog and user are set: their defaults read the commit
		// through repo.GetCommitMetadata.
		"template.app-deployed": `message: Application {{.app.metadata.name}} has successfully deployed.
newrelic:
  changelog: "sync of {{.app.metadata.name}}"
  user: argocd
`,
		"template.no-block": "message: m\n",
	}
}

func newrelicSecret() map[string][]byte {
	return map[string][]byte{"newrelic-apiKey": []byte(newrelicKey)}
}

const newrelicCreated = `{"deployment":{"id":1234,"revision":"r"}}`

func TestNewrelicThroughOutbox(t *testing.T) {
	s := svctest.NewSink(t, false, svctest.Answer{Status: http.StatusCreated, Body: newrelicCreated})
	rec := svctest.Deliver(t, svctest.Delivery{
		CM: newrelicCM(s.URL + "/"), Secret: newrelicSecret(),
		Service: "newrelic", Template: "app-deployed", Recipient: "987654", App: svctest.App("guestbook"),
	})
	if rec.State != outbox.StateDelivered || rec.Receipt.ID != "1234" {
		t.Fatalf("record: state %s receipt %+v error %q", rec.State, rec.Receipt, rec.LastError)
	}
	reqs := s.Requests()
	if len(reqs) != 1 {
		t.Fatalf("got %d requests, want 1", len(reqs))
	}
	r := reqs[0]
	if r.Method != http.MethodPost || r.Path != "/v2/applications/987654/deployments.json" || r.Header.Get("X-Api-Key") != newrelicKey {
		t.Errorf("request %s %s, X-Api-Key %q", r.Method, r.Path, r.Header.Get("X-Api-Key"))
	}
	// The revision defaults to the synced one, the description to the message.
	want := `{"deployment":{"revision":"0123456789abcdef0123456789abcdef01234567","changelog":"sync of guestbook","description":"Application guestbook has successfully deployed.","user":"argocd"}}`
	if d := cmp.Diff(want, r.Body); d != "" {
		t.Errorf("body (-want +got):\n%s", d)
	}
}

func TestNewrelicWithoutBlockDeadLetters(t *testing.T) {
	s := svctest.NewSink(t, false)
	rec := svctest.Deliver(t, svctest.Delivery{
		CM: newrelicCM(s.URL), Secret: newrelicSecret(),
		Service: "newrelic", Template: "no-block", Recipient: "987654", App: svctest.App("guestbook"),
	})
	if rec.State != outbox.StateDead || len(s.Requests()) != 0 {
		t.Fatalf("state %s after %d requests", rec.State, len(s.Requests()))
	}
	svctest.MustContain(t, "last error", rec.LastError, "no newrelic block")
}

func TestNewrelicStatuses(t *testing.T) {
	checkIncidentStatuses(t, incidentStatusCase{
		ok:      svctest.Answer{Status: http.StatusCreated, Body: newrelicCreated},
		secrets: []string{newrelicKey},
		delivery: func(s *svctest.Sink) svctest.Delivery {
			return svctest.Delivery{CM: newrelicCM(s.URL), Secret: newrelicSecret(),
				Service: "newrelic", Template: "app-deployed", Recipient: "987654", App: svctest.App("a")}
		},
	})
}
