package main

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestNotifyTemplateRenderPrintsServiceRequest renders a template for a
// service of a type from package services and checks that the exact
// request is printed (method, URL, headers, body), with the token from
// the Secret shown as its $key reference and the Authorization header
// redacted; and that an unsupported service type is an error, not output.
func TestNotifyTemplateRenderPrintsServiceRequest(t *testing.T) {
	app := tempFile(t, "app.yaml", notifyTestApp)
	const token = "mm-very-secret-token"
	cm := tempFile(t, "cm.yaml", `
apiVersion: v1
kind: ConfigMap
metadata: {name: argocd-notifications-cm}
data:
  service.mattermost: |
    apiURL: https://chat.example.com
    token: $mm-token
  service.carrierpigeon: |
    loft: rooftop-4
  template.web: |
    message: "{{.app.metadata.name}} deployed $mm-token"
    mattermost:
      attachments: '[{"title": "{{.app.metadata.name}}", "text": "`+token+`"}]'
`)
	secret := tempFile(t, "secret.yaml", `
apiVersion: v1
kind: Secret
metadata: {name: argocd-notifications-secret}
data:
  mm-token: `+base64.StdEncoding.EncodeToString([]byte(token))+`
`)
	out, _, err := execute(t, "notify", "template", "render", "web", "--app", app, "--service", "mattermost",
		"--recipient", "chan-1", "--notifications-cm", cm, "--notifications-secret", secret)
	if err != nil {
		t.Fatal(err)
	}
	rest := out
	for _, w := range []string{"POST https://chat.example.com/api/v4/posts", "Authorization: <redacted>", "Content-Type: application/json",
		`"channel_id": "chan-1"`, `"message": "web deployed $mm-token"`, `"text": "$mm-token"`, `"title": "web"`} {
		i := strings.Index(rest, w)
		if i < 0 {
			t.Fatalf("output lacks %q (in order):\n%s", w, out)
		}
		rest = rest[i+len(w):]
	}
	if strings.Contains(out, token) {
		t.Errorf("output shows the secret:\n%s", out)
	}
	_, _, err = execute(t, "notify", "template", "render", "web", "--app", app, "--service", "carrierpigeon",
		"--notifications-cm", cm, "--notifications-secret", secret)
	if err == nil || !strings.Contains(err.Error(), `"carrierpigeon" is not supported`) {
		t.Fatalf("carrierpigeon: error %v, want unsupported", err)
	}
}

// TestNotifySendNewServiceType sends one real message through a service
// of a type from package services (Mattermost) to a local server.
func TestNotifySendNewServiceType(t *testing.T) {
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got = append(got, r.Method+" "+r.URL.Path+" "+r.Header.Get("Authorization")+" "+string(b))
		w.WriteHeader(http.StatusCreated)
		_, _ = io.WriteString(w, `{"id":"post-9"}`)
	}))
	t.Cleanup(srv.Close)
	app := tempFile(t, "app.yaml", notifyTestApp)
	cm := tempFile(t, "cm.yaml", `
apiVersion: v1
kind: ConfigMap
metadata: {name: argocd-notifications-cm}
data:
  service.mattermost: |
    apiURL: `+srv.URL+`
    token: $mm-token
  template.web: |
    message: "{{.app.metadata.name}} deployed"
`)
	secret := tempFile(t, "secret.yaml", `
apiVersion: v1
kind: Secret
metadata: {name: argocd-notifications-secret}
stringData:
  mm-token: tok-123456
`)
	out, _, err := execute(t, "notify", "send", "web", "--app", app, "--service", "mattermost", "--recipient", "chan-9",
		"--notifications-cm", cm, "--notifications-secret", secret)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || !strings.HasPrefix(got[0], "POST /api/v4/posts Bearer tok-123456 ") || !strings.Contains(got[0], `"channel_id":"chan-9"`) {
		t.Fatalf("requests %q", got)
	}
	if !strings.Contains(out, "post-9") || strings.Contains(out, "tok-123456") {
		t.Errorf("report:\n%s", out)
	}
}

// A sender that logs in or exchanges a credential first shows every
// request of the send, in order, not only the first: Rocket.Chat's login
// and then its message; SQS's STS exchange (a web identity) and then the
// message. The credentials minted on the way are shown as <redacted>,
// like those of the config. Slack, webhooks and email show theirs too:
// Slack's Web API calls (with a grouping key, the group's first message
// and then a later one, which replies in the thread or updates the first
// message), each webhook's request with its auth redacted, a header from
// the Secret as its $key and the HMAC signature (computed with the
// Secret's key, which is not shown), and email's SMTP session, envelope
// and message without the password. Every host is .invalid: a dry run
// that connected anywhere would fail.
func TestNotifyTemplateRenderPrintsEveryRequestOfASend(t *testing.T) {
	app := tempFile(t, "app.yaml", notifyTestApp)
	identity := tempFile(t, "token", "web-identity-jwt")
	t.Setenv("AWS_ROLE_ARN", "arn:aws:iam::123456789012:role/crowsnest")
	t.Setenv("AWS_WEB_IDENTITY_TOKEN_FILE", identity)
	t.Setenv("AWS_ACCESS_KEY_ID", "")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "")
	cm := tempFile(t, "cm.yaml", `
apiVersion: v1
kind: ConfigMap
metadata: {name: argocd-notifications-cm}
data:
  service.rocketchat: |
    serverUrl: https://chat.example.com
    email: bot@example.com
    password: rocket-password
  service.awssqs: |
    region: eu-west-1
    queue: deploys
    account: "123456789012"
  service.slack: |
    token: $slack-token
    apiURL: https://slack.invalid/api/
    username: crowsnest
  service.webhook.hook: |
    url: https://hooks.invalid/deploy
    basicAuth: {username: bot, password: $hook-password}
    headers:
    - {name: X-Team, value: $team-id}
  service.webhook.ci: |
    url: https://ci:url-password-7@ci.invalid/build
  service.email: |
    host: smtp.invalid
    port: 587
    from: Crowsnest <crowsnest@example.com>
    username: bot@example.com
    password: $smtp-password
  template.web: |
    message: "{{.app.metadata.name}} deployed"
    email:
      subject: "Deployed: {{.app.metadata.name}}"
    webhook:
      hook: {method: PUT, path: /web, body: '{"app": {{toJson .app.metadata.name}}}'}
      ci: {path: /web, body: 'app={{.app.metadata.name}}'}
  template.web-update: |
    message: "{{.app.metadata.name}} at {{.app.status.sync.revision}}"
    slack:
      groupingKey: "{{.app.metadata.name}}"
      deliveryPolicy: PostAndUpdate
      attachments: '[{"title": "{{.app.metadata.name}}"}]'
  template.web-only-update: |
    message: "{{.app.metadata.name}} healthy"
    slack: {groupingKey: "{{.app.metadata.name}}", deliveryPolicy: Update}
  template.web-thread: |
    message: "{{.app.metadata.name}} synced"
    slack: {groupingKey: "{{.app.metadata.name}}", notifyBroadcast: true}
`)
	secrets := map[string]string{"slack-token": "xoxb-slack-secret-token", "hook-password": "hook-password-3",
		"team-id": "team-secret-42", "smtp-password": "smtp-password-5"}
	var secretYAML strings.Builder
	for k, v := range secrets {
		fmt.Fprintf(&secretYAML, "  %s: %s\n", k, v)
	}
	secret := tempFile(t, "secret.yaml", "apiVersion: v1\nkind: Secret\nmetadata: {name: argocd-notifications-secret}\nstringData:\n"+secretYAML.String())
	for _, tt := range []struct {
		service, template, recipient string
		want                         []string // in order
	}{
		{"rocketchat", "web", "general", []string{"POST https://chat.example.com/api/v1/login", "password=<redacted>",
			"---", "POST https://chat.example.com/api/v1/chat.postMessage", "X-Auth-Token: <redacted>", "X-User-Id: <redacted>", "web deployed"}},
		{"awssqs", "web", "general", []string{"POST https://sts.eu-west-1.amazonaws.com/", "AssumeRoleWithWebIdentity", "WebIdentityToken=<redacted>",
			"---", "Authorization: <redacted>", "X-Amz-Security-Token: <redacted>", "web deployed"}},
		{"slack", "web", "#deploys", []string{"POST https://slack.invalid/api/chat.postMessage", "Content-Type: application/x-www-form-urlencoded",
			"channel=#deploys", `"delivery":"00000000000000000000000000000001"`, "text=web deployed", "token=<redacted>", "username=crowsnest"}},
		{"slack", "web-update", "#deploys", []string{
			`# the first message of grouping key "web": no thread yet`,
			"POST https://slack.invalid/api/chat.postMessage", `attachments=[{"title":"web"`, "channel=#deploys", "text=web at abc1234def", "token=<redacted>",
			"---", `# a later message of grouping key "web", once its thread exists`,
			"POST https://slack.invalid/api/chat.update", "channel=CDRYRUN01", `"delivery":"00000000000000000000000000000002"`,
			"text=web at abc1234def", "token=<redacted>", "ts=1700000000.000100"}},
		{"slack", "web-only-update", "#deploys", []string{
			`# the first message of grouping key "web": no thread yet`, "service slack sends nothing for this template and recipient: no message to update",
			"---", "# a later message", "POST https://slack.invalid/api/chat.update", "channel=CDRYRUN01", "text=web healthy", "token=<redacted>", "ts=1700000000.000100"}},
		{"slack", "web-thread", "#deploys", []string{
			"# the first message", "POST https://slack.invalid/api/chat.postMessage", "channel=#deploys", "text=web synced", "token=<redacted>",
			"---", "# a later message", "POST https://slack.invalid/api/chat.postMessage", "channel=CDRYRUN01", "reply_broadcast=true",
			"text=web synced", "thread_ts=1700000000.000100", "token=<redacted>"}},
		{"hook", "web", "", []string{"PUT https://hooks.invalid/deploy/web", "Authorization: <redacted>", "Content-Type: application/json",
			"X-Crowsnest-Delivery: 00000000000000000000000000000001", "X-Team: $team-id", `{"app": "web"}`}},
		{"ci", "web", "", []string{"GET https://ci:%3Credacted%3E@ci.invalid/build/web", "Authorization: <redacted>", "app=web"}},
		{"email", "web", "dev@example.com, Ops <ops@example.com>", []string{"SMTP smtp.invalid:587", "TLS: starttls",
			"AUTH: bot@example.com, password <redacted>", "MAIL FROM: <crowsnest@example.com>", "RCPT TO: <dev@example.com>", "RCPT TO: <ops@example.com>",
			"", `From: "Crowsnest" <crowsnest@example.com>`, `To: <dev@example.com>, "Ops" <ops@example.com>`, "Subject: Deployed: web",
			"Message-ID: <00000000000000000000000000000001@example.com>", "\n\nweb deployed\n"}},
	} {
		t.Run(tt.service+"/"+tt.template, func(t *testing.T) {
			args := []string{"notify", "template", "render", tt.template, "--app", app, "--service", tt.service,
				"--notifications-cm", cm, "--notifications-secret", secret}
			if tt.recipient != "" {
				args = append(args, "--recipient", tt.recipient)
			}
			out, _, err := execute(t, args...)
			if err != nil {
				t.Fatal(err)
			}
			rest := out
			for _, w := range tt.want {
				i := strings.Index(rest, w)
				if i < 0 {
					t.Fatalf("output lacks %q (in order):\n%s", w, out)
				}
				rest = rest[i+len(w):]
			}
			shown := []string{"rocket-password", "web-identity-jwt", "dry-run-token", "dry-run-user", "url-password-7"}
			for _, v := range secrets {
				shown = append(shown, v)
			}
			for _, secret := range shown {
				if strings.Contains(out, secret) {
					t.Errorf("output shows %q:\n%s", secret, out)
				}
			}
		})
	}
}

// A webhook's HMAC signature is shown: it is no credential, and the
// receiver checks it. It is the one computed with the Secret's key over
// the body shown, byte for byte; the key is not shown.
func TestNotifyTemplateRenderShowsWebhookSignature(t *testing.T) {
	app := tempFile(t, "app.yaml", notifyTestApp)
	const key = "hmac-key-from-secret"
	cm := tempFile(t, "cm.yaml", `
apiVersion: v1
kind: ConfigMap
metadata: {name: argocd-notifications-cm}
data:
  template.web: |
    webhook:
      tracker: {path: /events, body: '{"app": {{toJson .app.metadata.name}}}'}
`)
	cfg := tempFile(t, "config.yaml", `
apiVersion: crowsnest.dev/v1alpha1
kind: Config
notifications:
  services:
    tracker:
      webhook:
        url: https://tracker.invalid/api
        bearer: $tracker-token
        hmacSecret: $tracker-hmac
        hmacHeader: X-Signature-256
`)
	secret := tempFile(t, "secret.yaml", `
apiVersion: v1
kind: Secret
metadata: {name: argocd-notifications-secret}
stringData: {tracker-hmac: `+key+`, tracker-token: tracker-token-9}
`)
	out, _, err := execute(t, "notify", "template", "render", "web", "--app", app, "--service", "tracker",
		"--config", cfg, "--notifications-cm", cm, "--notifications-secret", secret)
	if err != nil {
		t.Fatal(err)
	}
	body := `{"app": "web"}`
	m := hmac.New(sha256.New, []byte(key))
	m.Write([]byte(body))
	want := "POST https://tracker.invalid/api/events\nAuthorization: <redacted>\nContent-Type: application/json\nUser-Agent: crowsnest\n" +
		"X-Crowsnest-Delivery: 00000000000000000000000000000001\nX-Signature-256: sha256=" + hex.EncodeToString(m.Sum(nil)) + "\n\n" + body + "\n"
	if diff := cmp.Diff(want, out); diff != "" {
		t.Errorf("output (-want +got):\n%s", diff)
	}
}
