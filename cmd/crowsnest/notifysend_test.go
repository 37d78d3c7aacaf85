package main

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/crowsnest-dev/crowsnest/cmd/crowsnest/internal/notifycmd"
	"github.com/crowsnest-dev/crowsnest/internal/testnotify"
)

const sendApp = `apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: shop, namespace: argocd}
spec: {project: default}
status:
  sync: {status: Synced, revision: abc123}
  health: {status: Healthy}
`

// recorder is an HTTP server on 127.0.0.1 that records each request's
// path, Authorization header and body and answers with reply.
type recorder struct {
	srv  *httptest.Server
	mu   sync.Mutex
	reqs []recorded
}

type recorded struct{ path, auth, body string }

func newRecorder(t *testing.T, status int, reply string) *recorder {
	t.Helper()
	r := &recorder{}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		b, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		r.reqs = append(r.reqs, recorded{path: req.URL.Path, auth: req.Header.Get("Authorization"), body: string(b)})
		r.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = io.WriteString(w, reply)
	}))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *recorder) requests() []recorded {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]recorded(nil), r.reqs...)
}

// TestNotifySend sends one real message through each kind of service:
// a webhook and Slack's API (both local HTTP servers) and email (a local
// SMTP server with STARTTLS and AUTH), and checks what arrived, what the
// command printed (destination and receipt, no secret) and its exit.
func TestNotifySend(t *testing.T) {
	const (
		bearer    = "hook-bearer-secret-1"
		slackTok  = "xoxb-slack-token-secret-2"
		smtpPass  = "smtp-password-secret-3"
		slackOK   = `{"ok":true,"channel":"C0DEPLOYS","ts":"1700000000.000100"}`
		slackFail = `{"ok":false,"error":"channel_not_found"}`
	)
	hook := newRecorder(t, http.StatusAccepted, `{}`)
	hookDown := newRecorder(t, http.StatusInternalServerError, `boom`)
	slack := newRecorder(t, http.StatusOK, slackOK)
	slackBad := newRecorder(t, http.StatusOK, slackFail)
	mail := testnotify.NewSMTPServer(t, testnotify.SMTPOptions{Password: smtpPass})
	t.Setenv("HOOK_BEARER", bearer)
	t.Setenv("SLACK_TOKEN", slackTok)
	t.Setenv("SMTP_PASSWORD", smtpPass)

	dir := t.TempDir()
	app := filepath.Join(dir, "app.yaml")
	cfg := filepath.Join(dir, "crowsnest.yaml")
	writeSendFile(t, app, sendApp)
	writeSendFile(t, cfg, fmt.Sprintf(`apiVersion: crowsnest.dev/v1alpha1
kind: Config
notifications:
  services:
    hook: {webhook: {url: "%[1]s/base", bearer: "env:HOOK_BEARER"}}
    hook-down: {webhook: {url: "%[2]s"}}
    slack: {slack: {token: "env:SLACK_TOKEN", apiURL: "%[3]s/api/"}}
    slack-bad: {slack: {token: "env:SLACK_TOKEN", apiURL: "%[4]s/api/"}}
    mail: {email: {host: 127.0.0.1, port: %[5]d, username: crowsnest, password: "env:SMTP_PASSWORD", from: crowsnest@example.com, insecureSkipVerify: true}}
  templates:
    deployed:
      message: "{{.app.metadata.name}} is {{.app.status.sync.status}} at {{.app.status.sync.revision}}"
      email: {subject: "deployed {{.app.metadata.name}}"}
      webhook:
        hook: {method: POST, path: /deployed, body: '{"app": "{{.app.metadata.name}}"}'}
        hook-down: {method: POST, body: '{}'}
`, hook.srv.URL, hookDown.srv.URL, slack.srv.URL, slackBad.srv.URL, mail.Port(t)))
	send := func(args ...string) (string, string, error) {
		return execute(t, append([]string{"notify", "send", "deployed", "--config", cfg, "--app", app}, args...)...)
	}
	noSecrets := func(t *testing.T, out string) {
		t.Helper()
		for _, s := range []string{bearer, slackTok, smtpPass} {
			if strings.Contains(out, s) {
				t.Errorf("output shows a secret:\n%s", out)
			}
		}
	}

	t.Run("webhook", func(t *testing.T) {
		out, errOut, err := send("--service", "hook")
		if err != nil {
			t.Fatalf("notify send: %v\n%s", err, errOut)
		}
		reqs := hook.requests()
		if len(reqs) != 1 || reqs[0].path != "/base/deployed" || reqs[0].auth != "Bearer "+bearer || reqs[0].body != `{"app": "shop"}` {
			t.Fatalf("webhook got %+v, want one POST /base/deployed with the bearer and the rendered body", reqs)
		}
		want := "sent template deployed to hook (webhook, " + hook.srv.URL + "/base)\nreceipt: 202 Accepted\n"
		if out != want {
			t.Errorf("output = %q, want %q", out, want)
		}
		noSecrets(t, out+errOut)
	})

	t.Run("slack, as JSON", func(t *testing.T) {
		out, errOut, err := send("--service", "slack", "--recipient", "#deploys", "-o", "json")
		if err != nil {
			t.Fatalf("notify send: %v\n%s", err, errOut)
		}
		reqs := slack.requests()
		if len(reqs) != 1 || reqs[0].path != "/api/chat.postMessage" {
			t.Fatalf("slack got %+v, want one chat.postMessage", reqs)
		}
		form, err := url.ParseQuery(reqs[0].body)
		if err != nil {
			t.Fatal(err)
		}
		if tok := cmp.Or(strings.TrimPrefix(reqs[0].auth, "Bearer "), form.Get("token")); tok != slackTok {
			t.Errorf("slack got token %q, want the configured one", tok)
		}
		if form.Get("channel") != "#deploys" || form.Get("text") != "shop is Synced at abc123" {
			t.Errorf("slack message = %v, want the rendered text to #deploys", form)
		}
		var rep notifycmd.SendReport
		if err := json.Unmarshal([]byte(out), &rep); err != nil {
			t.Fatalf("not JSON: %v\n%s", err, out)
		}
		if rep.Receipt.ID != "1700000000.000100" || rep.Recipient != "#deploys" || rep.ServiceType != "slack" || rep.Endpoint != slack.srv.URL+"/api/" {
			t.Errorf("report = %+v, want Slack's ts as the receipt", rep)
		}
		checkJSONKeys(t, []byte(out))
		noSecrets(t, out+errOut)
	})

	t.Run("email", func(t *testing.T) {
		out, errOut, err := send("--service", "mail", "--recipient", "dev@example.com")
		if err != nil {
			t.Fatalf("notify send: %v\n%s", err, errOut)
		}
		mails := mail.Mail()
		if len(mails) != 1 {
			t.Fatalf("SMTP server got %d mails, want 1", len(mails))
		}
		got := string(mails[0].Data)
		if !strings.Contains(got, "Subject: deployed shop") || !strings.Contains(got, "shop is Synced at abc123") {
			t.Errorf("mail lacks the rendered subject and body:\n%s", got)
		}
		if !strings.HasPrefix(out, fmt.Sprintf("sent template deployed to mail:dev@example.com (email, smtp://127.0.0.1:%d)\nreceipt: <", mail.Port(t))) {
			t.Errorf("output = %q, want the destination and the Message-ID", out)
		}
		noSecrets(t, out+errOut)
	})

	failures := []struct {
		name    string
		args    []string
		wantErr string
	}{
		{name: "webhook answers 500", args: []string{"--service", "hook-down"}, wantErr: "500"},
		{name: "slack refuses", args: []string{"--service", "slack-bad", "--recipient", "#nowhere"}, wantErr: "channel_not_found"},
		{name: "unknown service", args: []string{"--service", "pager"}, wantErr: `--service "pager": not a configured service (configured: hook, hook-down, mail, slack, slack-bad)`},
		{name: "unknown template", args: []string{"--service", "hook"}, wantErr: `no template "deployed-x"`},
	}
	for _, tt := range failures {
		t.Run(tt.name, func(t *testing.T) {
			args := append([]string{"notify", "send", "deployed", "--config", cfg, "--app", app}, tt.args...)
			if tt.name == "unknown template" {
				args[2] = "deployed-x"
			}
			out, errOut, err := execute(t, args...)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("err = %v, want one saying %q\nstdout: %s\nstderr: %s", err, tt.wantErr, out, errOut)
			}
			if out != "" {
				t.Errorf("a failed send printed %q to stdout", out)
			}
			noSecrets(t, err.Error()+out+errOut)
		})
	}
}

// TestNotifySendWithArgoCDConfigMap sends through a service defined in an
// argocd-notifications-cm whose $key references a Secret manifest answers.
func TestNotifySendWithArgoCDConfigMap(t *testing.T) {
	hook := newRecorder(t, http.StatusOK, `{}`)
	dir := t.TempDir()
	app := filepath.Join(dir, "app.yaml")
	cm := filepath.Join(dir, "cm.yaml")
	sec := filepath.Join(dir, "secret.yaml")
	writeSendFile(t, app, sendApp)
	writeSendFile(t, cm, fmt.Sprintf(`apiVersion: v1
kind: ConfigMap
metadata: {name: argocd-notifications-cm}
data:
  service.webhook.audit: |
    url: %s
    headers:
      - name: Authorization
        value: token $audit-token
  template.app-synced: |
    webhook:
      audit:
        method: POST
        path: /synced
        body: '{"app": "{{.app.metadata.name}}"}'
`, hook.srv.URL))
	writeSendFile(t, sec, `apiVersion: v1
kind: Secret
metadata: {name: argocd-notifications-secret}
stringData:
  audit-token: audit-secret-4
`)
	out, errOut, err := execute(t, "notify", "send", "app-synced", "--notifications-cm", cm, "--notifications-secret", sec,
		"--app", app, "--service", "audit")
	if err != nil {
		t.Fatalf("notify send: %v\n%s", err, errOut)
	}
	reqs := hook.requests()
	if len(reqs) != 1 || reqs[0].path != "/synced" || reqs[0].auth != "token audit-secret-4" || reqs[0].body != `{"app": "shop"}` {
		t.Fatalf("webhook got %+v, want one POST /synced with the Secret's token", reqs)
	}
	if !strings.Contains(out, "receipt: 200 OK") || strings.Contains(out+errOut, "audit-secret-4") {
		t.Errorf("output = %q (stderr %q), want the receipt and no secret", out, errOut)
	}
}

func writeSendFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}
