package notifyctl

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/crowsnest-dev/crowsnest/config"
	"github.com/crowsnest-dev/crowsnest/notify/services/webhook"
)

// A credential the dry run cannot read (an env: variable not set here)
// stands in with its reference: the send is shown all the same, the
// stand-in is named, and the HMAC signature, the one value a stand-in
// would falsify, says it was not computed. With the variables set, it is
// the real one. A template without this webhook's request sends nothing,
// and says why.
func TestRenderWebhookStandIns(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	in := &Inputs{
		AppPath: write("app.yaml", "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata: {name: web, namespace: argocd}\n"),
		ConfigPath: write("config.yaml", `
apiVersion: crowsnest.dev/v1alpha1
kind: Config
notifications:
  services:
    tracker:
      webhook:
        url: https://tracker.invalid/api
        bearer: env:CROWSNEST_TEST_TRACKER_TOKEN
        hmacSecret: env:CROWSNEST_TEST_TRACKER_HMAC
  templates:
    web:
      message: web
      webhook:
        tracker: {path: /events, body: '{"app": {{toJson .app.metadata.name}}}'}
    chat-only:
      message: web
`),
	}
	const body = `{"app": "web"}`
	tests := []struct {
		name, template, token, key string
		wantStandIns               []string
		wantSignature, wantSkipped string
	}{
		{name: "credentials not here", template: "web",
			wantStandIns:  []string{"webhook.bearer (env:CROWSNEST_TEST_TRACKER_TOKEN)", "webhook.hmacSecret (env:CROWSNEST_TEST_TRACKER_HMAC)"},
			wantSignature: "<not computed: hmacSecret env:CROWSNEST_TEST_TRACKER_HMAC cannot be read here>"},
		{name: "credentials here", template: "web", token: "tracker-token-1", key: "tracker-hmac-key",
			wantSignature: webhook.Sign([]byte("tracker-hmac-key"), []byte(body))},
		{name: "no request for this webhook", template: "chat-only", wantSkipped: "template has no webhook.tracker",
			wantStandIns: []string{"webhook.bearer (env:CROWSNEST_TEST_TRACKER_TOKEN)", "webhook.hmacSecret (env:CROWSNEST_TEST_TRACKER_HMAC)"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("CROWSNEST_TEST_TRACKER_TOKEN", tt.token)
			t.Setenv("CROWSNEST_TEST_TRACKER_HMAC", tt.key)
			r, err := Render(t.Context(), in, tt.template, "tracker", "")
			if err != nil {
				t.Fatal(err)
			}
			if !r.Recorded {
				t.Fatal("the configured webhook's send was not recorded")
			}
			if diff := cmp.Diff(tt.wantStandIns, r.StandIns); diff != "" {
				t.Errorf("stand-ins (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantSkipped, r.Send.Skipped); diff != "" {
				t.Errorf("skipped (-want +got):\n%s", diff)
			}
			var got []string
			for _, req := range r.Send.Requests {
				got = append(got, req.Method+" "+req.URL, req.Header.Get("Authorization"), req.Header.Get(config.DefaultHMACHeader), string(req.Body))
			}
			var want []string
			if tt.wantSignature != "" {
				want = []string{"POST https://tracker.invalid/api/events", "<redacted>", tt.wantSignature, body}
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("requests (-want +got):\n%s", diff)
			}
		})
	}
}
