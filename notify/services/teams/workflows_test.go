package teams_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/crowsnest-dev/crowsnest/notify/outbox"
	"github.com/crowsnest-dev/crowsnest/notify/services/internal/svctest"
)

// workflowsHook is a Power Platform workflow URL's path and query; its
// sig is the secret.
const (
	workflowsHook = "/powerautomate/automations/direct/workflows/wf1/triggers/manual/paths/invoke?api-version=1&sig=wf-secret-sig"
	workflowsSig  = "wf-secret-sig"
)

func workflowsCM() map[string]string {
	return map[string]string{
		"service.teams-workflows": "recipientUrls:\n  channelName: $channel-workflows-url\n",
		"template.app-sync-succeeded": `message: Application {{.app.metadata.name}} has been successfully synced.
teams-workflows:
  title: Synced {{.app.metadata.name}}
  themeColor: Good
  facts: |
    [{"name": "Sync Status", "value": "{{.app.status.sync.status}}"}, {"name": "Replicas", "value": 3}]
  potentialAction: |
    [{"@type":"OpenUri", "name":"Open", "targets":[{"os":"default", "uri":"https://argocd.example.com/applications/{{.app.metadata.name}}"}]},
     {"@type":"HttpPOST", "name":"Ignored"}]
`,
		"template.custom-card": `teams-workflows:
  adaptiveCard: |
    {"type": "AdaptiveCard", "version": "1.5", "msteams": {"width": "Full"},
     "body": [{"type": "TextBlock", "text": "{{.app.metadata.name}} is {{.app.status.health.status}}"}]}
`,
	}
}

func workflowsSecret(s *svctest.Sink) map[string][]byte {
	return map[string][]byte{"channel-workflows-url": []byte(s.URL + workflowsHook)}
}

func TestTeamsWorkflowsThroughOutbox(t *testing.T) {
	for _, c := range []struct {
		template string
		card     map[string]any
	}{{
		template: "app-sync-succeeded",
		card: map[string]any{
			"type": "AdaptiveCard", "version": "1.4",
			"body": []any{
				map[string]any{"type": "TextBlock", "text": "Synced guestbook", "size": "Large", "weight": "Bolder", "color": "Good", "wrap": true},
				map[string]any{"type": "TextBlock", "text": "Application guestbook has been successfully synced.", "wrap": true},
				map[string]any{"type": "FactSet", "facts": []any{
					map[string]any{"title": "Sync Status", "value": "Synced"},
					map[string]any{"title": "Replicas", "value": "3"},
				}},
			},
			"actions": []any{map[string]any{"type": "Action.OpenUrl", "title": "Open", "url": "https://argocd.example.com/applications/guestbook"}},
		},
	}, {
		template: "custom-card",
		card: map[string]any{
			"type": "AdaptiveCard", "version": "1.5", "msteams": map[string]any{"width": "Full"},
			"body": []any{map[string]any{"type": "TextBlock", "text": "guestbook is Healthy"}},
		},
	}} {
		t.Run(c.template, func(t *testing.T) {
			s := svctest.NewSink(t, false, svctest.Answer{Status: http.StatusAccepted})
			rec := svctest.Deliver(t, svctest.Delivery{
				CM: workflowsCM(), Secret: workflowsSecret(s),
				Service: "teams-workflows", Template: c.template, Recipient: "channelName", App: svctest.App("guestbook"),
			})
			if rec.State != outbox.StateDelivered {
				t.Fatalf("state %s: %s", rec.State, rec.LastError)
			}
			reqs := s.Requests()
			if len(reqs) != 1 {
				t.Fatalf("got %d requests", len(reqs))
			}
			r := reqs[0]
			if r.Method != http.MethodPost || r.Path+"?"+r.Query != workflowsHook || r.Header.Get("Content-Type") != "application/json" {
				t.Errorf("request %s %s?%s %v", r.Method, r.Path, r.Query, r.Header)
			}
			var got map[string]any
			if err := json.Unmarshal([]byte(r.Body), &got); err != nil {
				t.Fatalf("body %s: %v", r.Body, err)
			}
			want := map[string]any{"type": "message", "attachments": []any{map[string]any{
				"contentType": "application/vnd.microsoft.card.adaptive", "content": c.card,
			}}}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("message (-want +got):\n%s", diff)
			}
		})
	}
}

// A URL that is not a Workflows webhook is refused before sending, as
// Argo CD refuses it, without printing it.
func TestTeamsWorkflowsRefusesOtherURLs(t *testing.T) {
	s := svctest.NewSink(t, false)
	rec := svctest.Deliver(t, svctest.Delivery{
		CM: workflowsCM(), Secret: map[string][]byte{"channel-workflows-url": []byte(s.URL + "/webhookb2/connector-secret")},
		Service: "teams-workflows", Template: "app-sync-succeeded", Recipient: "channelName", App: svctest.App("a"),
	})
	if rec.State != outbox.StateDead || len(s.Requests()) != 0 {
		t.Fatalf("state %s requests %d", rec.State, len(s.Requests()))
	}
	svctest.MustContain(t, "last error", rec.LastError, "Workflows", `"channelName"`)
	svctest.MustNotContain(t, "last error", rec.LastError, "connector-secret")
}

func TestTeamsWorkflowsStatuses(t *testing.T) {
	svctest.CheckStatuses(t, svctest.StatusCase{
		Setup: func(s *svctest.Sink) svctest.Delivery {
			return svctest.Delivery{CM: workflowsCM(), Secret: workflowsSecret(s),
				Service: "teams-workflows", Template: "app-sync-succeeded", Recipient: "channelName", App: svctest.App("a")}
		},
		OK:      svctest.Answer{Status: http.StatusAccepted},
		Secrets: []string{workflowsSig},
	})
}
