package config

import "testing"

// A webhook service read from an argocd-notifications-cm sends the message
// when a template has no block for it, as Argo CD does; one from
// crowsnest's own config keeps skipping such notifications.
func TestArgoCDConfigMapWebhookSendsMessage(t *testing.T) {
	n, err := ParseArgoCDConfigMap(map[string]string{"service.webhook.hook": "url: http://127.0.0.1:1/hook\n"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if w := n.Services["hook"].Webhook; w == nil || !w.SendMessage || w.Method != "GET" {
		t.Errorf("webhook service from the ConfigMap = %+v, want GET with SendMessage", w)
	}
	cfg, err := Parse([]byte("apiVersion: crowsnest.dev/v1alpha1\nkind: Config\nnotifications:\n  services:\n    hook:\n      webhook: {url: http://127.0.0.1:1/hook}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if w := cfg.Notifications.Services["hook"].Webhook; w == nil || w.SendMessage {
		t.Errorf("webhook service from crowsnest's config = %+v, want SendMessage off", w)
	}
}
