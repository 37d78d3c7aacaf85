package conformance

import (
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// teamsTemplate uses every field of a `teams:` block.
const teamsTemplate = `message: Application {{.app.metadata.name}} has been successfully synced.
teams:
  themeColor: "#000080"
  title: Synced {{.app.metadata.name}}
  summary: "{{.app.metadata.name}} synced"
  sections: |
    [{"activityTitle": "{{.app.metadata.name}}", "activitySubtitle": "{{.app.status.health.status}}"}]
  facts: |
    [{"name": "Sync Status", "value": "{{.app.status.sync.status}}"},
     {"name": "Repository", "value": "{{.app.spec.source.repoURL}}"}]
  potentialAction: |-
    [{"@type":"OpenUri", "name":"Operation Details",
      "targets":[{"os":"default", "uri":"{{.context.argocdUrl}}/applications/{{.app.metadata.name}}"}]}]
`

func TestTeamsOnTheWire(t *testing.T) {
	for name, tmpl := range map[string]string{
		"card fields":       teamsTemplate,
		"message only":      "message: Application {{.app.metadata.name}} synced.\n",
		"text over message": "message: ignored\nteams:\n  text: 'Text {{.app.metadata.name}}'\n",
		"template is the body": "message: ignored\nteams:\n  title: ignored\n  template: |\n" +
			`    {"@type": "MessageCard", "text": "{{.app.metadata.name}} is {{.app.status.health.status}}"}` + "\n",
	} {
		t.Run(name, func(t *testing.T) {
			compareOnWire(t, wireCase{
				CM: map[string]string{
					"service.teams":       "recipientUrls:\n  channelName: SINK/webhookb2/abc@tenant/IncomingWebhook/x/y\n",
					"template.app-synced": tmpl,
				},
				Service: "teams", Template: "app-synced", Recipient: "channelName",
				App:     wireApp("guestbook"),
				Answer:  func(wireRequest) (int, string) { return http.StatusOK, "1" },
				Headers: []string{"Content-Type"},
			})
		})
	}
}

func TestTeamsWorkflowsOnTheWire(t *testing.T) {
	for name, tmpl := range map[string]string{
		"card from fields": `message: Application {{.app.metadata.name}} synced.
teams-workflows:
  title: Synced {{.app.metadata.name}}
  summary: not sent
  template: not sent either
  themeColor: Good
  facts: |
    [{"name": "Sync Status", "value": "{{.app.status.sync.status}}"}, {"name": "Replicas", "value": 3},
     {"name": "Nothing", "value": null}, {"value": "no name"}]
  sections: |
    [{"activityTitle": "x", "facts": [{"name": "Health", "value": "{{.app.status.health.status}}"}, "not an object"]},
     {"facts": []}]
  potentialAction: |
    [{"@type":"OpenUri", "name":"Open", "targets":[{"os":"default", "uri":"{{.context.argocdUrl}}/applications/{{.app.metadata.name}}"}]},
     {"@type":"OpenUri", "name":"No target", "targets":[]}, {"@type":"HttpPOST", "name":"Ignored"}]
`,
		"message only": "message: Application {{.app.metadata.name}} synced.\n",
		"no text":      "teams-workflows:\n  title: Only a title\n",
		"adaptive card": "teams-workflows:\n  title: ignored\n  adaptiveCard: |\n" +
			`    {"type": "AdaptiveCard", "version": "1.5", "msteams": {"width": "Full"}, "body": [{"type": "TextBlock", "text": "{{.app.metadata.name}}"}]}` + "\n",
	} {
		t.Run(name, func(t *testing.T) {
			compareOnWire(t, wireCase{
				CM: map[string]string{
					// A Power Platform URL's /powerautomate/ path passes notifications-engine's check on 127.0.0.1.
					"service.teams-workflows": "recipientUrls:\n  channelName: SINK/powerautomate/automations/direct/workflows/wf1/triggers/manual/paths/invoke?api-version=1&sig=s3cr3t\n",
					"template.app-synced":     tmpl,
				},
				Service: "teams-workflows", Template: "app-synced", Recipient: "channelName",
				App:     wireApp("guestbook"),
				Answer:  func(wireRequest) (int, string) { return http.StatusAccepted, "" },
				Headers: []string{"Content-Type"},
			})
		})
	}
}

// telegramAnswer answers the Bot API's getMe and sendMessage.
func telegramAnswer(r wireRequest) (int, string) {
	if strings.HasSuffix(r.Path, "/getMe") {
		return http.StatusOK, `{"ok":true,"result":{"id":1,"is_bot":true,"first_name":"argocd","username":"argocd_bot"}}`
	}
	return http.StatusOK, `{"ok":true,"result":{"message_id":42,"chat":{"id":-100123}}}`
}

func TestTelegramOnTheWire(t *testing.T) {
	const token = "123456:AAE-wire-token"
	for _, recipient := range []string{"-1001234567890", "-1001234567890|17", "argocd_channel"} {
		t.Run(recipient, func(t *testing.T) {
			engine, crowsnest := sendBothSides(t, wireCase{
				CM: map[string]string{
					"service.telegram":      "token: $telegram-token\n",
					"template.app-deployed": "message: |\n  *{{.app.metadata.name}}* is now running `{{.app.status.sync.revision}}` [link]({{.context.argocdUrl}}/applications/{{.app.metadata.name}}).\n",
				},
				Secret:  map[string][]byte{"telegram-token": []byte(token)},
				Service: "telegram", Template: "app-deployed", Recipient: recipient,
				App: wireApp("guestbook"), TLS: true, Redirect: true, Answer: telegramAnswer,
			})
			// notifications-engine's library asks getMe before every
			// message; crowsnest sends the message only. The messages
			// must be the same request.
			if len(engine) != 2 || engine[0].Path != "/bot"+token+"/getMe" {
				t.Fatalf("notifications-engine: %+v, want getMe then sendMessage", engine)
			}
			if len(crowsnest) != 1 {
				t.Fatalf("crowsnest made %d requests, want 1: %+v", len(crowsnest), crowsnest)
			}
			w, g := engine[1], crowsnest[0]
			if w.Method != g.Method || w.Path != g.Path || w.Query != g.Query {
				t.Errorf("notifications-engine %s %s?%s, crowsnest %s %s?%s", w.Method, w.Path, w.Query, g.Method, g.Path, g.Query)
			}
			if w.Header.Get("Content-Type") != g.Header.Get("Content-Type") {
				t.Errorf("Content-Type: notifications-engine %q, crowsnest %q", w.Header.Get("Content-Type"), g.Header.Get("Content-Type"))
			}
			if w.Body != g.Body {
				t.Errorf("body (-notifications-engine +crowsnest):\n%s", cmp.Diff(w.Body, g.Body))
			}
		})
	}
}

// googleChatCardIDs replaces each cardsV2 entry's cardId, a random UUID on
// both sides, after checking it is one.
func googleChatCardIDs(t *testing.T) func(any) {
	return func(body any) {
		m, _ := body.(map[string]any)
		cards, _ := m["cardsV2"].([]any)
		for _, c := range cards {
			cm, _ := c.(map[string]any)
			if id, _ := cm["cardId"].(string); len(id) != 36 {
				t.Errorf("cardId %q is not a UUID", id)
			}
			cm["cardId"] = "random"
		}
	}
}

func TestGoogleChatOnTheWire(t *testing.T) {
	for name, tmpl := range map[string]string{
		"text": "message: The app {{.app.metadata.name}} has synced.\n",
		"cardsV2 in a thread": `message: not sent beside cards
googlechat:
  threadKey: "{{.app.metadata.name}}"
  cardsV2: |
    - header:
        title: ArgoCD Bot Notification
        subtitle: ""
      sections:
        - header: Sync
          collapsible: false
          uncollapsibleWidgetsCount: 0
          widgets:
            - decoratedText:
                topLabel: Status
                text: The app {{ .app.metadata.name }} is {{.app.status.health.status}}
                wrapText: true
            - divider: {}
            - buttonList:
                buttons:
                  - text: Open
                    disabled: false
                    onClick:
                      openLink:
                        url: "{{.context.argocdUrl}}/applications/{{.app.metadata.name}}"
    - sections:
        - widgets:
            - textParagraph:
                text: second card
`,
		"legacy cards": `googlechat:
  cards: |
    - header:
        title: "{{.app.metadata.name}}"
      sections:
        - widgets:
            - keyValue:
                topLabel: Repository
                content: "{{.app.spec.source.repoURL}}"
            - buttons:
                - textButton:
                    text: Open
                    onClick:
                      openLink:
                        url: "{{.context.argocdUrl}}/applications/{{.app.metadata.name}}"
`,
		"cards as JSON": `googlechat:
  cardsV2: '[{"header": {"title": "{{.app.metadata.name}}"}, "sections": [{"widgets": [{"textParagraph": {"text": "hi"}}]}]}]'
`,
	} {
		t.Run(name, func(t *testing.T) {
			compareOnWire(t, wireCase{
				CM: map[string]string{
					"service.googlechat":  "webhooks:\n  spaceName: SINK/v1/spaces/AAAA/messages?key=k3y&token=t0ken\n",
					"template.app-synced": tmpl,
				},
				Service: "googlechat", Template: "app-synced", Recipient: "spaceName",
				App:       wireApp("guestbook"),
				Answer:    func(wireRequest) (int, string) { return http.StatusOK, `{"name":"spaces/AAAA/messages/m1"}` },
				Headers:   []string{"Content-Type"},
				Normalize: googleChatCardIDs(t),
			})
		})
	}
}

// rocketChatAnswer answers Rocket.Chat's login and chat.postMessage.
func rocketChatAnswer(r wireRequest) (int, string) {
	if strings.HasSuffix(r.Path, "/login") {
		return http.StatusOK, `{"status":"success","data":{"authToken":"rc-token","userId":"user-1"}}`
	}
	return http.StatusOK, `{"success":true,"message":{"_id":"m1"}}`
}

func TestRocketChatOnTheWire(t *testing.T) {
	const attachments = `message: Application {{.app.metadata.name}} has been successfully synced.
rocketchat:
  attachments: |
    [{"title": "{{.app.metadata.name}}", "title_link": "{{.context.argocdUrl}}/applications/{{.app.metadata.name}}",
      "color": "#18be52", "not_a_field": "dropped", "collapsed": false, "ts": "",
      "fields": [{"title": "Sync Status", "value": "{{.app.status.sync.status}}", "short": true}, {"title": "Repository"}],
      "actions": [{"type": "button", "text": "Open", "url": "{{.context.argocdUrl}}/applications/{{.app.metadata.name}}"}],
      "button_alignment": "horizontal"}]
`
	for _, c := range []struct {
		name, settings, tmpl, recipient string
	}{
		{"attachments to a channel", "alias: Argo CD\nicon: \":rocket:\"\navatar: https://example.com/argo.png\n", attachments, "#deployments"},
		{"message to a room", "", "message: Application {{.app.metadata.name}} synced.\n", "GENERAL"},
		{"icon and avatar ignored when not valid", "icon: rocket\navatar: not a url\n", "message: x\nrocketchat:\n  attachments: ''\n", "@alice"},
	} {
		t.Run(c.name, func(t *testing.T) {
			compareOnWire(t, wireCase{
				CM: map[string]string{
					"service.rocketchat":  "serverUrl: SINK\nemail: argocd@example.com\npassword: $rocketchat-password\n" + c.settings,
					"template.app-synced": c.tmpl,
				},
				Secret:  map[string][]byte{"rocketchat-password": []byte("rc-p4ss&word")},
				Service: "rocketchat", Template: "app-synced", Recipient: c.recipient,
				App: wireApp("guestbook"), Answer: rocketChatAnswer,
				Headers: []string{"Content-Type", "X-Auth-Token", "X-User-Id"},
			})
		})
	}
}

func TestWebexOnTheWire(t *testing.T) {
	for _, c := range []struct{ name, apiURL, recipient, tmpl string }{
		{"person", "SINK", "alice@example.com", "message: |\n  **{{.app.metadata.name}}** is {{.app.status.health.status}}.\n"},
		{"room, apiURL with a slash", "SINK/", "Y2lzY29zcGFyazovL3VzL1JPT00vYmJj", "message: \"[{{.app.metadata.name}}]({{.context.argocdUrl}}/applications/{{.app.metadata.name}})\"\n"},
		{"empty message", "SINK", "not-an-email@localhost", "message: \"{{if false}}x{{end}}\"\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			compareOnWire(t, wireCase{
				CM: map[string]string{
					"service.webex":       "token: $webex-token\napiURL: " + c.apiURL + "\n",
					"template.app-synced": c.tmpl,
				},
				Secret:  map[string][]byte{"webex-token": []byte("webex-t0ken")},
				Service: "webex", Template: "app-synced", Recipient: c.recipient,
				App: wireApp("guestbook"), Answer: func(wireRequest) (int, string) { return http.StatusOK, `{"id":"m1"}` },
				Headers: []string{"Content-Type", "Authorization"},
			})
		})
	}
}
