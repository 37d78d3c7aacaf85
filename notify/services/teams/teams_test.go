package teams_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/crowsnest-dev/crowsnest/config"
	"github.com/crowsnest-dev/crowsnest/notify"
	"github.com/crowsnest-dev/crowsnest/notify/outbox"
	"github.com/crowsnest-dev/crowsnest/notify/services"
	"github.com/crowsnest-dev/crowsnest/notify/services/internal/svctest"
)

// teamsHook is the secret part of a Teams incoming webhook URL.
const teamsHook = "/webhookb2/0c0ffee-secret@tenant/IncomingWebhook/abc123/def456"

func teamsCM() map[string]string {
	return map[string]string{
		"service.teams": "recipientUrls:\n  channelName: $channel-teams-url\n",
		"template.app-sync-succeeded": `message: Application {{.app.metadata.name}} has been successfully synced.
teams:
  themeColor: "#000080"
  title: Synced {{.app.metadata.name}}
  facts: |
    [{"name": "Sync Status", "value": "{{.app.status.sync.status}}"},
     {"name": "Repository", "value": "{{.app.spec.source.repoURL}}"}]
  potentialAction: |-
    [{"@type":"OpenUri", "name":"Operation Details",
      "targets":[{"os":"default", "uri":"https://argocd.example.com/applications/{{.app.metadata.name}}"}]}]
`,
	}
}

func TestTeamsThroughOutbox(t *testing.T) {
	s := svctest.NewSink(t, false, svctest.Answer{Body: "1"})
	rec := svctest.Deliver(t, svctest.Delivery{
		CM: teamsCM(), Secret: map[string][]byte{"channel-teams-url": []byte(s.URL + teamsHook)},
		Service: "teams", Template: "app-sync-succeeded", Recipient: "channelName", App: svctest.App("guestbook"),
	})
	if rec.State != outbox.StateDelivered {
		t.Fatalf("record: state %s error %q", rec.State, rec.LastError)
	}
	reqs := s.Requests()
	if len(reqs) != 1 {
		t.Fatalf("got %d requests, want 1", len(reqs))
	}
	r := reqs[0]
	if r.Method != http.MethodPost || r.Path != "/webhookb2/0c0ffee-secret@tenant/IncomingWebhook/abc123/def456" {
		t.Errorf("request %s %s", r.Method, r.Path)
	}
	if ct := r.Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type = %q", ct)
	}
	var got map[string]any
	if err := json.Unmarshal([]byte(r.Body), &got); err != nil {
		t.Fatalf("body %s: %v", r.Body, err)
	}
	want := map[string]any{
		"@type": "MessageCard", "context": "https://schema.org/extensions",
		"title": "Synced guestbook", "summary": "", "themeColor": "#000080",
		"text": "Application guestbook has been successfully synced.",
		"sections": []any{map[string]any{"facts": []any{
			map[string]any{"name": "Sync Status", "value": "Synced"},
			map[string]any{"name": "Repository", "value": "https://github.com/example/guestbook.git"},
		}}},
		"potentialAction": []any{map[string]any{
			"@type": "OpenUri", "name": "Operation Details",
			"targets": []any{map[string]any{"os": "default", "uri": "https://argocd.example.com/applications/guestbook"}},
		}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("card (-want +got):\n%s", diff)
	}
}

func TestTeamsTemplateIsTheBody(t *testing.T) {
	s := svctest.NewSink(t, false, svctest.Answer{Body: "1"})
	cm := teamsCM()
	cm["template.raw"] = "teams:\n  template: '{\"text\": \"raw {{.app.metadata.name}}\"}'\n"
	rec := svctest.Deliver(t, svctest.Delivery{
		CM: cm, Secret: map[string][]byte{"channel-teams-url": []byte(s.URL + teamsHook)},
		Service: "teams", Template: "raw", Recipient: "channelName", App: svctest.App("guestbook"),
	})
	if rec.State != outbox.StateDelivered {
		t.Fatalf("state %s: %s", rec.State, rec.LastError)
	}
	if got := s.Requests()[0].Body; got != `{"text": "raw guestbook"}` {
		t.Errorf("body %s", got)
	}
}

// Teams connector webhooks answer "1" when they posted the card and
// report failures, throttling included, in the body of a 200.
func TestTeamsAnswerBody(t *testing.T) {
	secret := map[string][]byte{}
	send := func(t *testing.T, answers ...svctest.Answer) (outbox.Record, *svctest.Sink) {
		t.Helper()
		s := svctest.NewSink(t, false, answers...)
		secret["channel-teams-url"] = []byte(s.URL + teamsHook)
		return svctest.Deliver(t, svctest.Delivery{CM: teamsCM(), Secret: secret, Service: "teams", Template: "app-sync-succeeded",
			Recipient: "channelName", App: svctest.App("a")}), s
	}
	t.Run("throttled in a 200 is retried", func(t *testing.T) {
		rec, s := send(t, svctest.Answer{Body: "Webhook message delivery failed with error: Microsoft Teams endpoint returned HTTP error 429 with ContextId tcid=0"}, svctest.Answer{Body: "1"})
		if rec.State != outbox.StateDelivered || rec.Attempts != 2 || len(s.Requests()) != 2 {
			t.Fatalf("state %s attempts %d requests %d: %s", rec.State, rec.Attempts, len(s.Requests()), rec.LastError)
		}
	})
	t.Run("an error in a 200 is dead-lettered", func(t *testing.T) {
		rec, s := send(t, svctest.Answer{Body: "Summary or Text is required."})
		if rec.State != outbox.StateDead || rec.Attempts != 1 || len(s.Requests()) != 1 {
			t.Fatalf("state %s attempts %d requests %d", rec.State, rec.Attempts, len(s.Requests()))
		}
		svctest.MustContain(t, "last error", rec.LastError, "Summary or Text is required")
		svctest.MustNotContain(t, "last error", rec.LastError, teamsHook, "0c0ffee-secret")
	})
	t.Run("202 and nothing is not sent again", func(t *testing.T) {
		rec, s := send(t, svctest.Answer{Status: http.StatusAccepted})
		if rec.State != outbox.StateDead || len(s.Requests()) != 1 {
			t.Fatalf("state %s requests %d", rec.State, len(s.Requests()))
		}
		svctest.MustContain(t, "last error", rec.LastError, "teams-workflows")
	})
	t.Run("unknown recipient", func(t *testing.T) {
		s := svctest.NewSink(t, false)
		secret["channel-teams-url"] = []byte(s.URL + teamsHook)
		rec := svctest.Deliver(t, svctest.Delivery{CM: teamsCM(), Secret: secret, Service: "teams", Template: "app-sync-succeeded",
			Recipient: "other", App: svctest.App("a")})
		if rec.State != outbox.StateDead || len(s.Requests()) != 0 {
			t.Fatalf("state %s requests %d", rec.State, len(s.Requests()))
		}
		svctest.MustContain(t, "last error", rec.LastError, `"other"`)
	})
}

func TestTeamsStatuses(t *testing.T) {
	svctest.CheckStatuses(t, svctest.StatusCase{
		Setup: func(s *svctest.Sink) svctest.Delivery {
			return svctest.Delivery{CM: teamsCM(), Secret: map[string][]byte{"channel-teams-url": []byte(s.URL + teamsHook)},
				Service: "teams", Template: "app-sync-succeeded", Recipient: "channelName", App: svctest.App("a")}
		},
		OK:      svctest.Answer{Body: "1"},
		Secrets: []string{teamsHook, "0c0ffee-secret"},
	})
}

// crowsnest's own config names the same settings and template block as
// argocd-notifications-cm; a `$key` in recipientUrls reads the Secret.
func TestTeamsInOwnConfig(t *testing.T) {
	s := svctest.NewSink(t, false, svctest.Answer{Body: "1"})
	c, err := config.Parse([]byte(`apiVersion: crowsnest.dev/v1alpha1
kind: Config
notifications:
  services:
    ops:
      teams:
        recipientUrls:
          channelName: $teams-url
  templates:
    deployed:
      message: "{{.app.metadata.name}} deployed"
      teams:
        title: Deployed {{.app.metadata.name}}
  subscriptions:
  - recipients: ["ops:channelName"]
`))
	if err != nil {
		t.Fatal(err)
	}
	nc := &c.Notifications
	if err := nc.ResolveSecrets(map[string][]byte{"teams-url": []byte(s.URL + teamsHook)}); err != nil {
		t.Fatal(err)
	}
	ext := nc.Services["ops"].Ext
	kind, _ := services.Lookup(ext.Type)
	svc, err := kind.New("ops", ext.Settings, services.Options{})
	if err != nil {
		t.Fatal(err)
	}
	n := svctest.Render(t, nc, svctest.Delivery{Service: "ops", Template: "deployed", App: svctest.App("guestbook")})
	if _, err := svc.Send(t.Context(), n, notify.Destination{Service: "ops", Recipient: "channelName"}); err != nil {
		t.Fatal(err)
	}
	r := s.Requests()[0]
	var card map[string]any
	_ = json.Unmarshal([]byte(r.Body), &card)
	if r.Path != "/webhookb2/0c0ffee-secret@tenant/IncomingWebhook/abc123/def456" || card["title"] != "Deployed guestbook" || card["text"] != "guestbook deployed" {
		t.Errorf("request %s %s", r.Path, r.Body)
	}
}
