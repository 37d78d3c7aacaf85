package config

import (
	"strings"
	"testing"

	"github.com/crowsnest-dev/crowsnest/notify/services"
)

// TestExtServicesInOwnConfig reads a service of a type from package
// services, and its template block, from crowsnest's own config file, and
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
	mm := s.Ext.Settings.(*services.MattermostSettings)
	if mm.APIURL != "https://chat.example.com" || mm.Token != "$mm-token" {
		t.Errorf("settings %+v", mm)
	}
	n := c.Notifications
	if err := n.ResolveSecrets(map[string][]byte{"mm-token": []byte("tok")}); err != nil {
		t.Fatal(err)
	}
	if got := n.Services["chat"].Ext.Settings.(*services.MattermostSettings).Token; got != "tok" {
		t.Errorf("resolved token %q", got)
	}
	b, ok := c.Notifications.Templates["deployed"].Blocks["mattermost"].(*services.MattermostBlock)
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
