package services_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"regexp"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/crowsnest-dev/crowsnest/notify/outbox"
	"github.com/crowsnest-dev/crowsnest/notify/services/internal/svctest"
)

// googleChatHook is a space webhook's path and query; key and token are
// the secret.
const googleChatHook = "/v1/spaces/AAAA1234/messages?key=gc-secret-key&token=gc-secret-token"

func googleChatCM() map[string]string {
	return map[string]string{
		"service.googlechat": "webhooks:\n  spaceName: $space-webhook-url\n",
		"template.app-sync-succeeded": `message: The app {{ .app.metadata.name }} has successfully synced!
googlechat:
  threadKey: "{{.app.metadata.name}}"
  cardsV2: |
    - header:
        title: ArgoCD Bot Notification
      sections:
        - collapsible: false
          widgets:
            - decoratedText:
                text: The app {{ .app.metadata.name }} has successfully synced!
            - buttonList:
                buttons:
                  - text: Open
                    onClick:
                      openLink:
                        url: https://argocd.example.com/applications/{{.app.metadata.name}}
`,
		"template.text-only": "message: Text for {{.app.metadata.name}}\n",
	}
}

func googleChatSecret(s *svctest.Sink) map[string][]byte {
	return map[string][]byte{"space-webhook-url": []byte(s.URL + googleChatHook)}
}

const googleChatOK = `{"name":"spaces/AAAA1234/messages/msg.1","thread":{"name":"spaces/AAAA1234/threads/t1"}}`

func TestGoogleChatThroughOutbox(t *testing.T) {
	s := svctest.NewSink(t, false, svctest.Answer{Body: googleChatOK})
	rec := svctest.Deliver(t, svctest.Delivery{CM: googleChatCM(), Secret: googleChatSecret(s), Service: "googlechat",
		Template: "app-sync-succeeded", Recipient: "spaceName", App: svctest.App("guestbook")})
	if rec.State != outbox.StateDelivered || rec.Receipt.ID != "spaces/AAAA1234/messages/msg.1" {
		t.Fatalf("state %s receipt %+v: %s", rec.State, rec.Receipt, rec.LastError)
	}
	r := s.Requests()[0]
	q, _ := url.ParseQuery(r.Query)
	wantQ := url.Values{"key": {"gc-secret-key"}, "token": {"gc-secret-token"}, "threadKey": {"guestbook"},
		"messageReplyOption": {"REPLY_MESSAGE_FALLBACK_TO_NEW_THREAD"}}
	if r.Method != http.MethodPost || r.Path != "/v1/spaces/AAAA1234/messages" || r.Header.Get("Content-Type") != "application/json" {
		t.Errorf("request %s %s %v", r.Method, r.Path, r.Header)
	}
	if diff := cmp.Diff(wantQ, q); diff != "" {
		t.Errorf("query (-want +got):\n%s", diff)
	}
	var got map[string]any
	if err := json.Unmarshal([]byte(r.Body), &got); err != nil {
		t.Fatalf("body %s: %v", r.Body, err)
	}
	cards, _ := got["cardsV2"].([]any)
	if len(cards) != 1 {
		t.Fatalf("cardsV2 %s", r.Body)
	}
	card := cards[0].(map[string]any)
	if !regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`).MatchString(card["cardId"].(string)) {
		t.Errorf("cardId %v is not a random UUID", card["cardId"])
	}
	want := map[string]any{
		"header": map[string]any{"title": "ArgoCD Bot Notification"},
		"sections": []any{map[string]any{"widgets": []any{
			map[string]any{"decoratedText": map[string]any{"text": "The app guestbook has successfully synced!"}},
			map[string]any{"buttonList": map[string]any{"buttons": []any{map[string]any{
				"text": "Open", "onClick": map[string]any{"openLink": map[string]any{"url": "https://argocd.example.com/applications/guestbook"}},
			}}}},
		}}},
	}
	if diff := cmp.Diff(want, card["card"]); diff != "" {
		t.Errorf("card (-want +got):\n%s", diff)
	}
	if text, ok := got["text"]; !ok || text != "" {
		t.Errorf("text %v, want empty beside cards as Argo CD sends", text)
	}
}

func TestGoogleChatText(t *testing.T) {
	s := svctest.NewSink(t, false, svctest.Answer{Body: googleChatOK})
	rec := svctest.Deliver(t, svctest.Delivery{CM: googleChatCM(), Secret: googleChatSecret(s), Service: "googlechat",
		Template: "text-only", Recipient: "spaceName", App: svctest.App("guestbook")})
	if rec.State != outbox.StateDelivered {
		t.Fatalf("state %s: %s", rec.State, rec.LastError)
	}
	r := s.Requests()[0]
	if r.Body != `{"text":"Text for guestbook"}` || r.Query != "key=gc-secret-key&token=gc-secret-token" {
		t.Errorf("request ?%s %s", r.Query, r.Body)
	}
}

// An error Google Chat reports in its JSON answer fails the delivery, as
// in Argo CD.
func TestGoogleChatErrorAnswer(t *testing.T) {
	s := svctest.NewSink(t, false, svctest.Answer{Body: `{"error":{"code":400,"message":"Invalid JSON payload","status":"INVALID_ARGUMENT"}}`})
	rec := svctest.Deliver(t, svctest.Delivery{CM: googleChatCM(), Secret: googleChatSecret(s), Service: "googlechat",
		Template: "text-only", Recipient: "spaceName", App: svctest.App("guestbook")})
	if rec.State != outbox.StateDead || rec.Attempts != 1 {
		t.Fatalf("state %s attempts %d", rec.State, rec.Attempts)
	}
	svctest.MustContain(t, "last error", rec.LastError, "INVALID_ARGUMENT", "Invalid JSON payload")
	svctest.MustNotContain(t, "last error", rec.LastError, "gc-secret-key", "gc-secret-token", "AAAA1234")
}

func TestGoogleChatStatuses(t *testing.T) {
	svctest.CheckStatuses(t, svctest.StatusCase{
		Setup: func(s *svctest.Sink) svctest.Delivery {
			return svctest.Delivery{CM: googleChatCM(), Secret: googleChatSecret(s), Service: "googlechat",
				Template: "app-sync-succeeded", Recipient: "spaceName", App: svctest.App("a")}
		},
		OK:      svctest.Answer{Body: googleChatOK},
		Secrets: []string{"gc-secret-key", "gc-secret-token", "AAAA1234"},
	})
}
