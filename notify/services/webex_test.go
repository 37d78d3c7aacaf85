package services_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/crowsnest-dev/crowsnest/notify/outbox"
	"github.com/crowsnest-dev/crowsnest/notify/services/internal/svctest"
)

const webexToken = "webex-secret-bot-token"

func webexCM(api string) map[string]string {
	return map[string]string{
		"service.webex":         "token: $webex-token\napiURL: " + api + "/\n",
		"template.app-deployed": "message: |\n  **{{.app.metadata.name}}** is {{.app.status.health.status}}.\n",
	}
}

var webexSecret = map[string][]byte{"webex-token": []byte(webexToken)}

func TestWebexThroughOutbox(t *testing.T) {
	for _, c := range []struct{ recipient, key string }{
		{"alice@example.com", "toPersonEmail"},
		{"Y2lzY29zcGFyazovL3VzL1JPT00vYmJjZWIxYWQtNDNmMS0zYjU4LTkxNDctZjE0YmIwYzRkMTU0", "roomId"},
	} {
		t.Run(c.key, func(t *testing.T) {
			s := svctest.NewSink(t, false, svctest.Answer{Body: `{"id":"msg-1","roomId":"r"}`})
			rec := svctest.Deliver(t, svctest.Delivery{CM: webexCM(s.URL), Secret: webexSecret, Service: "webex",
				Template: "app-deployed", Recipient: c.recipient, App: svctest.App("guestbook")})
			if rec.State != outbox.StateDelivered || rec.Receipt.ID != "msg-1" {
				t.Fatalf("state %s receipt %+v: %s", rec.State, rec.Receipt, rec.LastError)
			}
			r := s.Requests()[0]
			if r.Method != http.MethodPost || r.Path != "/v1/messages" || r.Header.Get("Authorization") != "Bearer "+webexToken ||
				r.Header.Get("Content-Type") != "application/json" {
				t.Errorf("request %s %s %v", r.Method, r.Path, r.Header)
			}
			var got map[string]any
			if err := json.Unmarshal([]byte(r.Body), &got); err != nil {
				t.Fatal(err)
			}
			want := map[string]any{c.key: c.recipient, "markdown": "**guestbook** is Healthy.\n"}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("message (-want +got):\n%s", diff)
			}
		})
	}
}

// Argo CD counts only 200 as sent; another 2xx is not sent again.
func TestWebexOnly200(t *testing.T) {
	s := svctest.NewSink(t, false, svctest.Answer{Status: http.StatusNoContent})
	rec := svctest.Deliver(t, svctest.Delivery{CM: webexCM(s.URL), Secret: webexSecret, Service: "webex",
		Template: "app-deployed", Recipient: "room", App: svctest.App("a")})
	if rec.State != outbox.StateDead || len(s.Requests()) != 1 {
		t.Fatalf("state %s requests %d", rec.State, len(s.Requests()))
	}
}

func TestWebexStatuses(t *testing.T) {
	svctest.CheckStatuses(t, svctest.StatusCase{
		Setup: func(s *svctest.Sink) svctest.Delivery {
			return svctest.Delivery{CM: webexCM(s.URL), Secret: webexSecret, Service: "webex",
				Template: "app-deployed", Recipient: "alice@example.com", App: svctest.App("a")}
		},
		OK:      svctest.Answer{Body: `{"id":"m"}`},
		Secrets: []string{webexToken},
	})
}
