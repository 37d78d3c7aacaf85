package services_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/crowsnest-dev/crowsnest/notify/outbox"
	"github.com/crowsnest-dev/crowsnest/notify/services/internal/svctest"
)

func mattermostCM(url string) map[string]string {
	return map[string]string{
		"service.mattermost": "apiURL: " + url + "\ntoken: $mattermost-token\n",
		"template.app-deployed": `message: Application {{.app.metadata.name}} is now running a new version.
mattermost:
  attachments: |
    [{"title": "{{.app.metadata.name}}", "color": "#18be52",
      "fields": [{"title": "Sync Status", "value": "{{.app.status.sync.status}}", "short": true}]}]
`,
	}
}

func TestMattermostThroughOutbox(t *testing.T) {
	s := svctest.NewSink(t, false, svctest.Answer{Status: http.StatusCreated, Body: `{"id":"post-1"}`})
	const token = "mm-secret-token"
	rec := svctest.Deliver(t, svctest.Delivery{
		CM: mattermostCM(s.URL), Secret: map[string][]byte{"mattermost-token": []byte(token)},
		Service: "mattermost", Template: "app-deployed", Recipient: "chan-123", App: svctest.App("guestbook"),
	})
	if rec.State != outbox.StateDelivered || rec.Receipt.ID != "post-1" {
		t.Fatalf("record: state %s receipt %+v error %q", rec.State, rec.Receipt, rec.LastError)
	}
	reqs := s.Requests()
	if len(reqs) != 1 {
		t.Fatalf("got %d requests, want 1", len(reqs))
	}
	r := reqs[0]
	if r.Method != http.MethodPost || r.Path != "/api/v4/posts" {
		t.Errorf("request %s %s, want POST /api/v4/posts", r.Method, r.Path)
	}
	if got := r.Header.Get("Authorization"); got != "Bearer "+token {
		t.Errorf("Authorization = %q", got)
	}
	var body struct {
		ChannelID string `json:"channel_id"`
		Message   string `json:"message"`
		Props     struct {
			Attachments []struct {
				Title  string `json:"title"`
				Fields []struct{ Title, Value string }
			} `json:"attachments"`
		} `json:"props"`
	}
	if err := json.Unmarshal([]byte(r.Body), &body); err != nil {
		t.Fatalf("body %s: %v", r.Body, err)
	}
	if body.ChannelID != "chan-123" || body.Message != "Application guestbook is now running a new version." {
		t.Errorf("body %s", r.Body)
	}
	if len(body.Props.Attachments) != 1 || body.Props.Attachments[0].Title != "guestbook" ||
		body.Props.Attachments[0].Fields[0].Value != "Synced" {
		t.Errorf("attachments %s", r.Body)
	}
}

func TestMattermostStatuses(t *testing.T) {
	const token = "mm-secret-token"
	secret := map[string][]byte{"mattermost-token": []byte(token)}
	t.Run("429 waits Retry-After then delivers", func(t *testing.T) {
		s := svctest.NewSink(t, false, svctest.Answer{Status: http.StatusTooManyRequests, Header: map[string]string{"Retry-After": "0"}}, svctest.Answer{Status: http.StatusCreated, Body: `{"id":"p2"}`})
		rec := svctest.Deliver(t, svctest.Delivery{CM: mattermostCM(s.URL), Secret: secret, Service: "mattermost", Template: "app-deployed", Recipient: "c", App: svctest.App("a"), MaxAttempts: 1})
		if rec.State != outbox.StateDelivered || len(s.Requests()) != 2 {
			t.Fatalf("state %s after %d requests: %s", rec.State, len(s.Requests()), rec.LastError)
		}
	})
	t.Run("5xx retried", func(t *testing.T) {
		s := svctest.NewSink(t, false, svctest.Answer{Status: http.StatusBadGateway}, svctest.Answer{Status: http.StatusCreated, Body: `{"id":"p3"}`})
		rec := svctest.Deliver(t, svctest.Delivery{CM: mattermostCM(s.URL), Secret: secret, Service: "mattermost", Template: "app-deployed", Recipient: "c", App: svctest.App("a")})
		if rec.State != outbox.StateDelivered || rec.Attempts != 2 {
			t.Fatalf("state %s attempts %d: %s", rec.State, rec.Attempts, rec.LastError)
		}
	})
	t.Run("4xx dead-lettered at once without the token", func(t *testing.T) {
		s := svctest.NewSink(t, false, svctest.Answer{Status: http.StatusUnauthorized, Body: `{"message":"bad token"}`})
		rec := svctest.Deliver(t, svctest.Delivery{CM: mattermostCM(s.URL), Secret: secret, Service: "mattermost", Template: "app-deployed", Recipient: "c", App: svctest.App("a")})
		if rec.State != outbox.StateDead || rec.Attempts != 1 || len(s.Requests()) != 1 {
			t.Fatalf("state %s attempts %d requests %d", rec.State, rec.Attempts, len(s.Requests()))
		}
		svctest.MustContain(t, "last error", rec.LastError, "401", "bad token")
		svctest.MustNotContain(t, "last error", rec.LastError, token)
	})
}
