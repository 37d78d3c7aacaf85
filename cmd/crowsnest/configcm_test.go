package main

import (
	"strings"
	"testing"
)

// TestConfigValidateNotificationsCM checks `config validate` on an
// argocd-notifications-cm manifest: a service type crowsnest cannot send
// to, a bad service setting and a broken trigger expression are each
// reported with the data key's line; a valid one passes.
func TestConfigValidateNotificationsCM(t *testing.T) {
	bad := tempFile(t, "argocd-notifications-cm.yaml", `apiVersion: v1
kind: ConfigMap
metadata:
  name: argocd-notifications-cm
data:
  service.carrierpigeon: |
    loft: rooftop-4
  service.mattermost: |
    token: $mm-token
  trigger.on-x: |
    - when: app.status.sync.status ==
      send: [x]
  template.x: |
    message: hello
`)
	_, errOut, err := execute(t, "config", "validate", bad)
	if err == nil {
		t.Fatal("config validate accepted a ConfigMap crowsnest cannot fully serve")
	}
	for _, want := range []string{
		bad + ":6: service.carrierpigeon: service type not supported by crowsnest: its notifications would not be sent",
		bad + ":8: service.mattermost: apiURL: required",
		bad + ":10: trigger.on-x[0].when",
	} {
		if !strings.Contains(errOut, want) {
			t.Errorf("output lacks %q:\n%s", want, errOut)
		}
	}
	good := tempFile(t, "good-cm.yaml", `apiVersion: v1
kind: ConfigMap
metadata: {name: argocd-notifications-cm}
data:
  service.mattermost: |
    apiURL: $mm-url
    token: $mm-token
  trigger.on-x: |
    - when: app.status.sync.status == 'Synced'
      send: [x]
  template.x: |
    message: hello
    mattermost:
      attachments: '[{"title": "{{.app.metadata.name}}"}]'
`)
	out, errOut, err := execute(t, "config", "validate", good)
	if err != nil || !strings.Contains(out, "valid") {
		t.Fatalf("valid ConfigMap: %v\n%s%s", err, out, errOut)
	}
}
