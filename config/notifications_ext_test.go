package config

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/crowsnest-dev/crowsnest/config/servicetypes"
)

// TestExtServicesInOwnConfig reads a service of a type from package
// servicetypes, and its template block, from crowsnest's own config file, and
// checks that its mistakes are errors with the field and line.
func TestExtServicesInOwnConfig(t *testing.T) {
	c, err := Parse([]byte(header + `notifications:
  services:
    chat:
      mattermost:
        apiURL: https://chat.example.com
        token: $mm-token
  templates:
    deployed:
      message: "{{.app.metadata.name}} deployed"
      mattermost:
        attachments: '[{"title": "{{.app.metadata.name}}"}]'
  subscriptions:
  - recipients: ["chat:town-square"]
`))
	if err != nil {
		t.Fatal(err)
	}
	s := c.Notifications.Services["chat"]
	if s.Type() != "mattermost" || s.Ext == nil {
		t.Fatalf("service chat: type %q ext %+v", s.Type(), s.Ext)
	}
	mm := s.Ext.Settings.(*servicetypes.MattermostSettings)
	if mm.APIURL != "https://chat.example.com" || mm.Token != "$mm-token" {
		t.Errorf("settings %+v", mm)
	}
	n := c.Notifications
	if err := n.ResolveSecrets(map[string][]byte{"mm-token": []byte("tok")}); err != nil {
		t.Fatal(err)
	}
	if got := n.Services["chat"].Ext.Settings.(*servicetypes.MattermostSettings).Token; got != "tok" {
		t.Errorf("resolved token %q", got)
	}
	b, ok := c.Notifications.Templates["deployed"].Blocks["mattermost"].(*servicetypes.MattermostBlock)
	if !ok || !strings.Contains(b.Attachments, "{{.app.metadata.name}}") {
		t.Errorf("template block %#v", c.Notifications.Templates["deployed"].Blocks)
	}

	for _, tc := range []struct{ name, yaml, want string }{
		{"unknown setting", "  services:\n    chat:\n      mattermost:\n        apiURL: https://x\n        token: t\n        channel: c\n",
			"notifications.services[chat].mattermost.channel: unknown field"},
		{"missing setting", "  services:\n    chat:\n      mattermost:\n        token: t\n",
			"notifications.services[chat].mattermost: apiURL: required"},
		// Every Argo CD type has a sender; a type neither has is an
		// unknown key of crowsnest's strict config.
		{"unknown type", "  services:\n    bus:\n      carrierpigeon:\n        url: https://x\n",
			"notifications.services[bus].carrierpigeon: unknown field"},
		{"two types", "  services:\n    chat:\n      mattermost: {apiURL: 'https://x', token: t}\n      email: {host: smtp.example.com, from: a@example.com}\n",
			"notifications.services[chat]"},
		{"unknown block field", "  templates:\n    t:\n      message: hi\n      mattermost:\n        color: red\n",
			"notifications.templates[t].mattermost.color: unknown field"},
		{"unknown block", "  templates:\n    t:\n      message: hi\n      carrierpigeon:\n        attributes: {a: b}\n",
			"notifications.templates[t].carrierpigeon: unknown field"},
		{"bad template in block", "  templates:\n    t:\n      message: hi\n      mattermost:\n        attachments: '{{.app'\n",
			"notifications.templates[t].mattermost.attachments"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(header + "notifications:\n" + tc.yaml))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error = %v, want it to contain %q", err, tc.want)
			}
		})
	}
}

// TestInlineBlockFields: the keys a teams-workflows block has from the
// teams block it embeds (`yaml:",inline"`) are read, checked and named
// like its own: the same field path, line and message as in a teams
// block, in crowsnest's config and in an argocd-notifications-cm.
func TestInlineBlockFields(t *testing.T) {
	block := func(typ, body string) string {
		return header + "notifications:\n  templates:\n    t:\n      message: hi\n      " + typ + ":\n" + body
	}
	c, err := Parse([]byte(block("teams-workflows", "        title: '{{.app.metadata.name}}'\n        adaptiveCard: '{}'\n")))
	if err != nil {
		t.Fatal(err)
	}
	wb, ok := c.Notifications.Templates["t"].Blocks["teams-workflows"].(*servicetypes.TeamsWorkflowsBlock)
	if !ok || wb.Title != "{{.app.metadata.name}}" || wb.AdaptiveCard != "{}" {
		t.Errorf("teams-workflows block %#v", c.Notifications.Templates["t"].Blocks["teams-workflows"])
	}

	for _, tc := range []struct{ name, body, msg string }{
		{"wrong type", "        title: [1]\n", "expected a string, got a list"},
		{"typo", "        titel: x\n", `unknown field (did you mean "title"?)`},
		{"bad template", "        title: '{{.app'\n", "unclosed action"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, typ := range []string{"teams", "teams-workflows"} {
				_, err := Parse([]byte(block(typ, tc.body)))
				field := "title"
				if tc.name == "typo" {
					field = "titel"
				}
				want := []FieldError{{Path: "notifications.templates[t]." + typ + "." + field, Line: 8, Msg: tc.msg}}
				if diff := cmp.Diff(want, gotFieldErrors(t, err, want)); diff != "" {
					t.Errorf("%s block (-want +got):\n%s", typ, diff)
				}
			}
		})
	}

	n, err := ParseArgoCDConfigMap(map[string]string{
		"template.t": "message: hi\nteams-workflows:\n  Title: x\n  titel: y\n",
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if b := n.Templates["t"].Blocks["teams-workflows"].(*servicetypes.TeamsWorkflowsBlock); b.Title != "x" {
		t.Errorf("Title (case folded, as Argo CD reads it) = %q, want x", b.Title)
	}
	if diff := cmp.Diff([]string{"template.t.teams-workflows.titel (not used by crowsnest)"}, n.Ignored); diff != "" {
		t.Errorf("ignored (-want +got):\n%s", diff)
	}
}
