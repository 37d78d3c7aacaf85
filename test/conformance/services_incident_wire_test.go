package conformance

import (
	"net/http"
	"testing"
)

// opsgenieTemplate is Argo CD's documented Opsgenie template (visibleTo
// with the capitalised keys its docs use).
const opsgenieTemplate = `message: |
  [Argo CD] Application {{.app.metadata.name}} has a problem.
opsgenie:
  description: |
    Application: {{.app.metadata.name}}
    Health Status: {{.app.status.health.status}}
    Operation State Phase: {{.app.status.operationState.phase}}
    Sync Status: {{.app.status.sync.status}}
  priority: P1
  alias: "{{.app.metadata.name}}"
  note: Error from Argo CD!
  actions:
    - Restart
    - "{{.app.metadata.namespace}}"
  tags:
    - OverwriteQuietHours
    - Critical
  visibleTo:
    - Id: "{{.app.metadata.name}}-team"
      Type: "team"
    - Name: "rocket_team"
      Type: "team"
    - Username: "trinity@opsgenie.com"
      Type: "user"
  details:
    environment: production
    app: "{{.app.metadata.name}}"
  entity: Argo CD Application
  user: John Doe
`

// TestOpsgenieOnTheWire: apiUrl is a bare host as Argo CD's docs write
// it; one without "api" in its name (127.0.0.1:port) is called over http
// by both.
func TestOpsgenieOnTheWire(t *testing.T) {
	for name, tmpl := range map[string]string{
		"documented template": opsgenieTemplate,
		"message only":        "message: Application {{.app.metadata.name}} is {{.app.status.health.status}}\n",
		"description only":    "message: m\nopsgenie:\n  description: \"{{.app.metadata.name}}\"\n",
	} {
		t.Run(name, func(t *testing.T) {
			compareOnWire(t, wireCase{
				CM: map[string]string{
					"service.opsgenie":   "apiUrl: SINKHOST\napiKeys:\n  team-a: $opsgenie-key\n",
					"template.a-problem": tmpl,
				},
				Secret:  map[string][]byte{"opsgenie-key": []byte("og-key")},
				Service: "opsgenie", Template: "a-problem", Recipient: "team-a",
				App: wireApp("guestbook"),
				Answer: func(wireRequest) (int, string) {
					return http.StatusAccepted, `{"result":"Request will be processed","took":0.302,"requestId":"43a29c5c"}`
				},
				Headers: []string{"Authorization", "Content-Type", "Accept"},
			})
		})
	}
}
