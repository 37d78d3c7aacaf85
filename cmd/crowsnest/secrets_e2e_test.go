package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"

	"github.com/crowsnest-dev/crowsnest/internal/testgit"
	"github.com/crowsnest-dev/crowsnest/internal/testnotify"
	"github.com/crowsnest-dev/crowsnest/internal/testreg"
)

// The known secret values of TestE2ESecretsNeverLeak: the right ones and
// the wrong ones crowsnest is given for the failing paths.
var leakSecrets = map[string]string{
	"registry password":        "reg-pass-S3CR3T-4a1f",
	"wrong registry password":  "reg-wrong-S3CR3T-77c2",
	"Git token":                "git-token-S3CR3T-9b3e",
	"wrong Git token":          "git-wrong-S3CR3T-1d0a",
	"Slack token":              "xoxb-slack-S3CR3T-5e6f",
	"wrong Slack token":        "xoxb-wrong-S3CR3T-0a9b",
	"SMTP password":            "smtp-pass-S3CR3T-2c8d",
	"wrong SMTP password":      "smtp-wrong-S3CR3T-3e7f",
	"webhook bearer token":     "hook-bearer-S3CR3T-3f4a",
	"webhook HMAC secret":      "hook-hmac-S3CR3T-6b7c",
	"registry webhook secret":  "regwebhook-S3CR3T-8d9e",
	"wrong registry webhook":   "regwebhook-wrong-S3CR3T-5c4d",
	"notifications Secret key": "cm-host-S3CR3T-7e8f",
}

// leakForms are the ways a secret could show: as is, in base64 (basic
// auth headers, docker configs), URL-escaped and JSON-escaped.
func leakForms(name, v string) map[string]string {
	forms := map[string]string{name: v, name + " (base64)": base64.StdEncoding.EncodeToString([]byte(v)),
		name + " (URL-escaped)": url.QueryEscape(v)}
	for _, user := range []string{"robot", "bot", "crowsnest", "x-access-token"} {
		forms[name+" (base64 with user "+user+")"] = base64.StdEncoding.EncodeToString([]byte(user + ":" + v))
	}
	return forms
}

// slackAPI is a Slack Web API on 127.0.0.1 that accepts one token.
type slackAPI struct {
	*httptest.Server
	token string
	mu    sync.Mutex
	posts []url.Values // what was posted, credentials removed
	tried int
}

func startSlackAPI(t *testing.T, token string) *slackAPI {
	t.Helper()
	s := &slackAPI{token: token}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		got := r.PostForm.Get("token")
		if got == "" {
			got = strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
		}
		form := url.Values{}
		for k, v := range r.PostForm {
			if k != "token" {
				form[k] = v
			}
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		s.tried++
		w.Header().Set("Content-Type", "application/json")
		if got != s.token {
			_, _ = io.WriteString(w, `{"ok":false,"error":"invalid_auth"}`)
			return
		}
		s.posts = append(s.posts, form)
		_, _ = fmt.Fprintf(w, `{"ok":true,"channel":"C1","ts":"1700000000.%06d"}`, len(s.posts))
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *slackAPI) counts() (posted, tried int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.posts), s.tried
}

// hookSink answers webhooks on /ok (with the right bearer token), /fail
// (500) and /denied (401), recording each request without its
// Authorization header.
type hookSink struct {
	*httptest.Server
	mu   sync.Mutex
	seen map[string][]string
}

func startHookSink(t *testing.T, bearer string) *hookSink {
	t.Helper()
	h := &hookSink{seen: map[string][]string{}}
	h.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		auth := r.Header.Get("Authorization")
		r.Header.Del("Authorization")
		hdr, _ := json.Marshal(r.Header)
		h.mu.Lock()
		h.seen[r.URL.Path] = append(h.seen[r.URL.Path], string(hdr)+"\n"+string(body))
		h.mu.Unlock()
		switch {
		case r.URL.Path == "/fail":
			http.Error(w, "backend down", http.StatusInternalServerError)
		case r.URL.Path == "/denied" || auth != "Bearer "+bearer:
			http.Error(w, "who are you", http.StatusUnauthorized)
		}
	}))
	t.Cleanup(h.Close)
	return h
}

func (h *hookSink) requests(path string) []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.seen[path]...)
}

// secretApp is a kustomize Application with the given annotations, its
// source in repoURL, running image:1.0.0.
func secretApp(t *testing.T, ns, name, repoURL, image, annotations string) {
	t.Helper()
	createApp(t, ns, fmt.Sprintf(`
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata:
  name: %[1]s
  annotations:
    argocd-image-updater.argoproj.io/image-list: app=%[2]s
%[3]s
spec:
  project: default
  destination: {server: https://kubernetes.default.svc, namespace: %[1]s}
  source: {repoURL: %[4]s, path: apps/web, targetRevision: main}
`, name, image, annotations, repoURL), image+":1.0.0")
}

// crowsnest is given known secrets (registry passwords, Git tokens, a
// Slack token, SMTP passwords, a webhook bearer token and HMAC secret, the
// registry webhook secret, a value of the notifications Secret) and runs
// every path that touches them, each both succeeding and failing: registry
// auth accepted and refused, a Git push and a refused one, Slack, webhook
// and email sends delivered and refused, registry webhooks with the right
// and a wrong secret, config validation of pasted secrets and an
// argocd-notifications-cm whose Secret values fail validation. Then the
// daemon's whole log, the Events, /metrics, the delivery log and outbox
// state, the Applications, the messages the destinations received and
// the CLI's output are searched for each value, as is and encoded: none
// may appear.
func TestE2ESecretsNeverLeak(t *testing.T) {
	s := leakSecrets
	kubeconfig, ns, dir := e2eCluster(t, "e2e-secrets")
	cs := kubernetes.NewForConfigOrDie(env.Config)
	secret := func(name string, data map[string]string) {
		t.Helper()
		if _, err := cs.CoreV1().Secrets(ns).Create(t.Context(), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name}, StringData: data}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	good := testreg.StartOCI(t, testreg.OCIOptions{Auth: testreg.AuthBearer, Username: "robot", Password: s["registry password"]})
	web, kube := pushTags(t, good, "team/web", "1.0.0", "1.5.0"), pushTags(t, good, "team/kube", "1.0.0", "2.0.0")
	bad := testreg.StartOCI(t, testreg.OCIOptions{Auth: testreg.AuthBasic, Username: "robot", Password: "the-real-password"})
	badWeb := pushTags(t, bad, "team/web", "1.0.0", "1.5.0")
	secret("reg-creds", map[string]string{"creds": "robot:" + s["registry password"]})
	t.Setenv("BAD_REG_CREDS", "robot:"+s["wrong registry password"])

	gitSrv := testgit.Start(t, testgit.Options{Username: "bot", Password: s["Git token"]})
	seed := map[string]string{"apps/web/kustomization.yaml": "images:\n- name: " + web + "\n  newTag: 1.0.0\n"}
	gitSrv.CreateRepo(t, "deploy-ok")
	gitSrv.CreateRepo(t, "deploy-bad")
	before := gitSrv.Seed(t, "deploy-ok", "main", seed, "initial")
	gitSrv.Seed(t, "deploy-bad", "main", seed, "initial")
	secret("git-creds", map[string]string{"username": "bot", "password": s["Git token"], "url": gitSrv.URL})
	secret("git-wrong", map[string]string{"username": "bot", "password": s["wrong Git token"], "url": gitSrv.URL})

	slackOK, slackBad := startSlackAPI(t, s["Slack token"]), startSlackAPI(t, s["Slack token"])
	hooks := startHookSink(t, s["webhook bearer token"])
	mail := testnotify.NewSMTPServer(t, testnotify.SMTPOptions{Password: s["SMTP password"]})
	for k, v := range map[string]string{
		"SLACK_TOKEN": s["Slack token"], "SLACK_WRONG": s["wrong Slack token"], "HOOK_BEARER": s["webhook bearer token"],
		"HOOK_HMAC": s["webhook HMAC secret"], "SMTP_PASSWORD": s["SMTP password"], "SMTP_WRONG": s["wrong SMTP password"],
		"REG_HOOK_SECRET": s["registry webhook secret"],
	} {
		t.Setenv(k, v)
	}

	cfgPath := filepath.Join(dir, "crowsnest.yaml")
	writeFile(t, cfgPath, fmt.Sprintf(`apiVersion: crowsnest.dev/v1alpha1
kind: Config
log: {level: debug}
leaderElection: {leaseNamespace: %[1]s}
registries:
  pollInterval: 5s
  list:
    - {prefix: "%[2]s", credentials: "secret:%[1]s/reg-creds#creds"}
    - {prefix: "%[3]s", credentials: "env:BAD_REG_CREDS"}
  webhook:
    sources:
      - {type: generic, secretEnv: REG_HOOK_SECRET}
      - {type: dockerhub, secretEnv: REG_HOOK_SECRET}
notifications:
  catalog: true
  services:
    slack-ok: {slack: {token: "env:SLACK_TOKEN", apiURL: "%[4]s/api/"}}
    slack-bad: {slack: {token: "env:SLACK_WRONG", apiURL: "%[5]s/api/"}}
    hook-ok: {webhook: {url: "%[6]s/ok", bearer: "env:HOOK_BEARER", hmacSecret: "env:HOOK_HMAC"}}
    hook-fail: {webhook: {url: "%[6]s/fail", bearer: "env:HOOK_BEARER", hmacSecret: "env:HOOK_HMAC"}}
    hook-denied: {webhook: {url: "%[6]s/denied", basicAuth: {username: bot, password: "env:HOOK_BEARER"}, hmacSecret: "env:HOOK_HMAC"}}
    mail-ok: {email: {host: 127.0.0.1, port: %[7]d, username: crowsnest, password: "env:SMTP_PASSWORD", from: crowsnest@example.com, insecureSkipVerify: true}}
    mail-bad: {email: {host: 127.0.0.1, port: %[7]d, username: crowsnest, password: "env:SMTP_WRONG", from: crowsnest@example.com, insecureSkipVerify: true}}
  subscriptions:
    - recipients: [slack-ok:deploys, slack-bad:deploys, hook-ok, hook-fail, hook-denied, mail-ok:dev@example.com, mail-bad:dev@example.com]
      triggers: [on-created, on-image-updated]
`, ns, good.Host(), bad.Host(), slackOK.URL, slackBad.URL, hooks.URL, mail.Port(t)))
	metricsAddr, webhookAddr := freeAddr(t), freeAddr(t)
	d := startDaemon(t, "--kubeconfig", kubeconfig, "--config", cfgPath, "--namespace", ns, "--log-format", "json",
		"--metrics-bind-address", metricsAddr, "--health-probe-bind-address", "0", "--webhook-bind-address", webhookAddr,
		"--git-cache-dir", filepath.Join(dir, "git"))
	d.waitLog(t, `"msg":"engine caches synced"`)

	secretApp(t, ns, "git-ok", gitSrv.RepoURL("deploy-ok"), web, "    argocd-image-updater.argoproj.io/write-back-method: git:secret:"+ns+"/git-creds")
	secretApp(t, ns, "git-bad", gitSrv.RepoURL("deploy-bad"), web, "    argocd-image-updater.argoproj.io/write-back-method: git:secret:"+ns+"/git-wrong")
	secretApp(t, ns, "kube-ok", "https://git.example.com/kube.git", kube, "")
	secretApp(t, ns, "reg-bad", "https://git.example.com/bad.git", badWeb, "")

	// Every path ran, succeeding and failing.
	waitFor(t, "the Git push with the right token", func() bool { return gitSrv.Head(t, "deploy-ok", "main") != before })
	waitFor(t, "the Application patched after registry auth", func() bool {
		imgs := kustomizeImages(t, ns, "kube-ok")
		return len(imgs) == 1 && strings.HasSuffix(imgs[0], ":2.0.0")
	})
	d.waitLog(t, `"msg":"git write-back failed; will retry"`, `"app":"`+ns+`/git-bad"`)
	d.waitLog(t, `"msg":"no version selected"`, `"app":"`+ns+`/reg-bad"`)
	for _, svc := range []string{"slack-bad", "hook-denied", "mail-bad"} {
		d.waitLog(t, `"msg":"notification given up"`, `"service":"`+svc+`"`)
	}
	d.waitLog(t, `"msg":"notification failed, will retry"`, `"service":"hook-fail"`)
	waitFor(t, "deliveries to every working destination", func() bool {
		posted, _ := slackOK.counts()
		mails := len(mail.Mail())
		return posted >= 2 && len(hooks.requests("/ok")) >= 2 && mails >= 2
	})
	if _, tried := slackBad.counts(); tried == 0 {
		t.Error("the Slack service with the wrong token never called the API")
	}
	if mail.Denied() == 0 {
		t.Error("the SMTP server never refused the wrong password")
	}

	// Registry webhooks with the right and a wrong secret.
	hookCodes := map[string]int{}
	for name, req := range map[string]struct{ path, auth, body string }{
		"generic, right bearer":    {"/webhooks/registry/generic", "Bearer " + s["registry webhook secret"], `{"repository":"` + web + `","tag":"1.5.0"}`},
		"generic, wrong bearer":    {"/webhooks/registry/generic", "Bearer " + s["wrong registry webhook"], `{"repository":"` + web + `","tag":"1.5.0"}`},
		"dockerhub, right ?secret": {"/webhooks/registry/dockerhub?secret=" + url.QueryEscape(s["registry webhook secret"]), "", `{"push_data":{"tag":"1"},"repository":{"repo_name":"team/web"}}`},
		"dockerhub, wrong ?secret": {"/webhooks/registry/dockerhub?secret=" + url.QueryEscape(s["wrong registry webhook"]), "", `{"push_data":{"tag":"1"},"repository":{"repo_name":"team/web"}}`},
		"generic, bad body":        {"/webhooks/registry/generic", "Bearer " + s["registry webhook secret"], `{"repository":"ghcr.io/a/b"`},
	} {
		hookCodes[name] = postWebhook(t, "http://"+webhookAddr+req.path, req.auth, req.body)
	}
	for name, want := range map[string]int{"generic, right bearer": 202, "generic, wrong bearer": 401, "dockerhub, right ?secret": 202, "dockerhub, wrong ?secret": 401, "generic, bad body": 400} {
		if hookCodes[name] != want {
			t.Errorf("registry webhook %s: %d, want %d", name, hookCodes[name], want)
		}
	}
	d.waitLog(t, `"msg":"registry webhook unauthorized"`)

	// Everything crowsnest showed anyone.
	outputs := map[string]string{"daemon log": strings.Join(d.lines(), "\n")}
	_, outputs["/metrics"] = httpGet(t.Context(), "http://"+metricsAddr+"/metrics")
	// Events are recorded asynchronously: wait until the three kinds are
	// there (or the wait times out, and the check below names what is
	// missing).
	wantEvents := []string{"ImagesUpdated: ", "ImageUpdateFailed: git write-back", "ImageUpdateFailed: image app"}
	listEvents := func() string {
		events, err := cs.CoreV1().Events(ns).List(t.Context(), metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var evText []string
		for _, e := range events.Items {
			evText = append(evText, e.Reason+": "+e.Message)
		}
		return strings.Join(evText, "\n")
	}
	for deadline := time.Now().Add(waitTimeout); ; time.Sleep(100 * time.Millisecond) { // sleep-ok: poll interval
		outputs["Events"] = listEvents()
		missing := slices.ContainsFunc(wantEvents, func(want string) bool { return !strings.Contains(outputs["Events"], want) })
		if !missing || time.Now().After(deadline) {
			break
		}
	}
	for _, want := range wantEvents {
		if !strings.Contains(outputs["Events"], want) {
			t.Errorf("no Event %q among:\n%s", want, outputs["Events"])
		}
	}
	cms, err := cs.CoreV1().ConfigMaps(ns).List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	outputs["ConfigMaps (outbox, state)"] = mustYAML(t, cms.Items)
	apps, err := appsIn(ns).List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	outputs["Applications"] = mustYAML(t, apps.Items)
	outputs["notify log"] = runCLI(t, "notify", "log", "--kubeconfig", kubeconfig, "-n", ns, "-o", "json")
	if !strings.Contains(outputs["notify log"], "invalid_auth") {
		t.Errorf("the delivery log does not show the refused Slack token's error:\n%s", outputs["notify log"])
	}
	slackOK.mu.Lock()
	outputs["Slack messages"] = fmt.Sprint(slackOK.posts)
	slackOK.mu.Unlock()
	for _, p := range []string{"/ok", "/fail", "/denied"} {
		outputs["webhook requests to "+p] = strings.Join(hooks.requests(p), "\n")
	}
	var mails []string
	for _, m := range mail.Mail() {
		mails = append(mails, string(m.Data))
	}
	outputs["emails"] = strings.Join(mails, "\n")
	outputs["config validate"] = validatePastedSecrets(t, dir, s)
	outputs["run with a bad argocd-notifications-cm"] = runWithBadNotificationsCM(t, kubeconfig, ns, dir, s["notifications Secret key"])

	for name, v := range s {
		for form, value := range leakForms(name, v) {
			for where, text := range outputs {
				if i := strings.Index(text, value); i >= 0 {
					t.Errorf("the %s shows in the %s: ...%s...", form, where, text[max(0, i-200):min(len(text), i+len(value)+100)])
				}
			}
		}
	}
}

// postWebhook posts body with an Authorization header (when auth is set)
// and returns the status.
func postWebhook(t *testing.T, target, auth, body string) int {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, target, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode
}

func mustYAML(t *testing.T, v any) string {
	t.Helper()
	b, err := yaml.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// runCLI runs crowsnest with args and returns its output, failing the
// test when it fails.
func runCLI(t *testing.T, args ...string) string {
	t.Helper()
	out, err := exec.CommandContext(t.Context(), binary, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("crowsnest %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// validatePastedSecrets runs `crowsnest config validate` on a config
// whose author pasted secrets where references belong, and returns what
// it printed; every field must be reported.
func validatePastedSecrets(t *testing.T, dir string, s map[string]string) string {
	t.Helper()
	path := filepath.Join(dir, "pasted.yaml")
	writeFile(t, path, fmt.Sprintf(`apiVersion: crowsnest.dev/v1alpha1
kind: Config
registries:
  list:
    - {prefix: a.example.com, credentials: "robot:%s"}
    - {prefix: b.example.com, credentials: "env:%s"}
  webhook:
    sources: [{type: generic, secretEnv: "%s"}]
notifications:
  services:
    slack: {slack: {token: "%s"}}
    hook: {webhook: {url: "https://hooks.example.com/x", bearer: "%s", hmacSecret: "env:%s"}}
    mail: {email: {host: smtp.example.com, username: u, password: "%s", from: a@example.com}}
`, s["registry password"], s["wrong registry password"], s["registry webhook secret"], s["Slack token"],
		s["webhook bearer token"], s["webhook HMAC secret"], s["SMTP password"]))
	cmd := exec.CommandContext(t.Context(), binary, "config", "validate", path)
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("config validate accepted pasted secrets:\n%s", out)
	}
	for _, field := range []string{"registries.list[0].credentials", "registries.list[1].credentials", "registries.webhook.sources[0].secretEnv",
		"services[slack].slack.token", "services[hook].webhook.bearer", "services[hook].webhook.hmacSecret", "services[mail].email.password"} {
		if !strings.Contains(string(out), field) {
			t.Errorf("config validate does not report %s:\n%s", field, out)
		}
	}
	return string(out)
}

// runWithBadNotificationsCM starts crowsnest with an argocd-notifications-cm
// whose `$smtp-host` reference reads a Secret value that fails validation,
// and returns its output: it must refuse to start, naming the field and
// the reference.
func runWithBadNotificationsCM(t *testing.T, kubeconfig, ns, dir, value string) string {
	t.Helper()
	cs := kubernetes.NewForConfigOrDie(env.Config)
	if _, err := cs.CoreV1().Secrets(ns).Create(t.Context(), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "argocd-notifications-secret"},
		StringData: map[string]string{"smtp-host": value + " not a host"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().ConfigMaps(ns).Create(t.Context(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "argocd-notifications-cm"},
		Data: map[string]string{"service.email.cm": "host: $smtp-host\nport: 587\nfrom: $smtp-host"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "with-cm.yaml")
	writeFile(t, path, fmt.Sprintf("apiVersion: crowsnest.dev/v1alpha1\nkind: Config\nleaderElection: {leaseNamespace: %s}\n"+
		"notifications:\n  argocdConfigMap: {name: argocd-notifications-cm, secret: argocd-notifications-secret}\n", ns))
	ctx, cancel := context.WithTimeout(t.Context(), waitTimeout)
	defer cancel()
	out, err := exec.CommandContext(ctx, binary, "run", "--kubeconfig", kubeconfig, "--config", path, "--namespace", ns, "--log-format", "json",
		"--metrics-bind-address", "0", "--health-probe-bind-address", "0", "--webhook-bind-address", "0").CombinedOutput()
	if err == nil || ctx.Err() != nil || !strings.Contains(string(out), "service.email.cm.host") || !strings.Contains(string(out), "$smtp-host") {
		t.Errorf("crowsnest run with a bad argocd-notifications-cm: %v, want it to refuse naming service.email.cm.host and $smtp-host:\n%s", err, out)
	}
	return string(out)
}
