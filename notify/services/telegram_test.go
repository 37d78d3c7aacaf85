package services_test

import (
	"net/http"
	"net/url"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/crowsnest-dev/crowsnest/notify/outbox"
	"github.com/crowsnest-dev/crowsnest/notify/services/internal/svctest"
)

const telegramToken = "123456:AAE-bot-secret-token"

func telegramCM() map[string]string {
	return map[string]string{
		"service.telegram":      "token: $telegram-token\n",
		"template.app-deployed": "message: |\n  *{{.app.metadata.name}}* is now running revision `{{.app.status.sync.revision}}`.\n",
	}
}

var telegramSecret = map[string][]byte{"telegram-token": []byte(telegramToken)}

const telegramOK = `{"ok":true,"result":{"message_id":42,"chat":{"id":-1001234567890}}}`

func TestTelegramThroughOutbox(t *testing.T) {
	text := "*guestbook* is now running revision `0123456789abcdef0123456789abcdef01234567`.\n"
	for _, c := range []struct {
		recipient string
		want      url.Values
	}{
		{"-1001234567890", url.Values{"chat_id": {"-1001234567890"}}},
		{"-1001234567890|17", url.Values{"chat_id": {"-1001234567890"}, "message_thread_id": {"17"}}},
		{"argocd_channel", url.Values{"chat_id": {"@argocd_channel"}}},
		// Argo CD sends these two as @@argocd_channel and @987654321, which Telegram refuses.
		{"@argocd_channel", url.Values{"chat_id": {"@argocd_channel"}}},
		{"987654321", url.Values{"chat_id": {"987654321"}}},
	} {
		t.Run(c.recipient, func(t *testing.T) {
			s := svctest.NewSink(t, true, svctest.Answer{Body: telegramOK})
			rec := svctest.Deliver(t, svctest.Delivery{
				CM: telegramCM(), Secret: telegramSecret, Service: "telegram", Template: "app-deployed",
				Recipient: c.recipient, App: svctest.App("guestbook"), Transport: svctest.Redirect(s),
			})
			if rec.State != outbox.StateDelivered || rec.Receipt.ID != "42" {
				t.Fatalf("state %s receipt %+v: %s", rec.State, rec.Receipt, rec.LastError)
			}
			reqs := s.Requests()
			if len(reqs) != 1 {
				t.Fatalf("got %d requests, want sendMessage only", len(reqs))
			}
			r := reqs[0]
			if r.Method != http.MethodPost || r.Path != "/bot"+telegramToken+"/sendMessage" ||
				r.Header.Get("Content-Type") != "application/x-www-form-urlencoded" {
				t.Errorf("request %s %s %v", r.Method, r.Path, r.Header)
			}
			got, err := url.ParseQuery(r.Body)
			if err != nil {
				t.Fatal(err)
			}
			want := url.Values{
				"text": {text}, "parse_mode": {"Markdown"}, "business_connection_id": {""}, "entities": {"null"},
				"link_preview_options": {"{}"}, "reply_parameters": {`{"message_id":0}`},
			}
			for k, v := range c.want {
				want[k] = v
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("form (-want +got):\n%s", diff)
			}
		})
	}
}

func TestTelegramBadRecipient(t *testing.T) {
	s := svctest.NewSink(t, true)
	rec := svctest.Deliver(t, svctest.Delivery{
		CM: telegramCM(), Secret: telegramSecret, Service: "telegram", Template: "app-deployed",
		Recipient: "-100x|1", App: svctest.App("a"), Transport: svctest.Redirect(s),
	})
	if rec.State != outbox.StateDead || len(s.Requests()) != 0 {
		t.Fatalf("state %s requests %d", rec.State, len(s.Requests()))
	}
}

func TestTelegramStatuses(t *testing.T) {
	setup := func(s *svctest.Sink) svctest.Delivery {
		return svctest.Delivery{CM: telegramCM(), Secret: telegramSecret, Service: "telegram", Template: "app-deployed",
			Recipient: "-1001234567890", App: svctest.App("a"), Transport: svctest.Redirect(s)}
	}
	svctest.CheckStatuses(t, svctest.StatusCase{Setup: setup, TLS: true, OK: svctest.Answer{Body: telegramOK}, Secrets: []string{telegramToken, "bot-secret"}})
	// The Bot API's flood control says how long to wait in the body only.
	t.Run("retry_after in the body", func(t *testing.T) {
		svctest.CheckStatuses(t, svctest.StatusCase{Setup: setup, TLS: true, OK: svctest.Answer{Body: telegramOK},
			RateLimited: &svctest.Answer{Status: http.StatusTooManyRequests,
				Body: `{"ok":false,"error_code":429,"description":"Too Many Requests: retry after 1","parameters":{"retry_after":1}}`}})
	})
}
