package conformance

import (
	"net/http"
	"testing"
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
