package main

import (
	"encoding/base64"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
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
// like those of the config.
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
  template.web: |
    message: "{{.app.metadata.name}} deployed"
`)
	for _, tt := range []struct {
		service string
		want    []string // in order
	}{
		{"rocketchat", []string{"POST https://chat.example.com/api/v1/login", "password=%3Credacted%3E",
			"---", "POST https://chat.example.com/api/v1/chat.postMessage", "X-Auth-Token: <redacted>", "X-User-Id: <redacted>", "web deployed"}},
		{"awssqs", []string{"POST https://sts.eu-west-1.amazonaws.com/", "AssumeRoleWithWebIdentity", "WebIdentityToken=%3Credacted%3E",
			"---", "Authorization: <redacted>", "X-Amz-Security-Token: <redacted>", "web deployed"}},
	} {
		t.Run(tt.service, func(t *testing.T) {
			out, _, err := execute(t, "notify", "template", "render", "web", "--app", app, "--service", tt.service,
				"--recipient", "general", "--notifications-cm", cm)
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
			for _, secret := range []string{"rocket-password", "web-identity-jwt", "dry-run-token", "dry-run-user"} {
				if strings.Contains(out, secret) {
					t.Errorf("output shows %q:\n%s", secret, out)
				}
			}
		})
	}
}
