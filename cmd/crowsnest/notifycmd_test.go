package main

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes"

	"github.com/crowsnest-dev/crowsnest/cmd/crowsnest/internal/notifycmd"
	"github.com/crowsnest-dev/crowsnest/config"
	crowsnestd "github.com/crowsnest-dev/crowsnest/internal/daemon"
	"github.com/crowsnest-dev/crowsnest/internal/kubecore/kubecoretest"
	"github.com/crowsnest-dev/crowsnest/internal/testenv"
	"github.com/crowsnest-dev/crowsnest/notify/outbox"
	"github.com/crowsnest-dev/crowsnest/watcher"
)

const notifyTestApp = `
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: web, namespace: argocd, uid: u-web}
spec:
  project: default
  source: {repoURL: "git@github.com:acme/apps.git", path: web, targetRevision: main}
status:
  sync: {status: Synced, revision: abc1234def}
  health: {status: Healthy}
  operationState: {phase: Succeeded, syncResult: {revision: abc1234def}}
`

func tempFile(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestNotifyDryRuns(t *testing.T) {
	app := tempFile(t, "app.yaml", notifyTestApp)
	cm := tempFile(t, "cm.yaml", `
apiVersion: v1
kind: ConfigMap
metadata: {name: argocd-notifications-cm}
data:
  trigger.on-web: |
    - when: app.metadata.name == 'web'
      oncePer: app.status.sync.revision
      send: [web]
    - when: app.status.health.status == 'Degraded'
      send: [web]
  template.web: |
    message: "{{.app.metadata.name}} at {{.app.status.sync.revision | trunc 7}}"
    webhook:
      hook: {method: PUT, path: /deploys, body: '{"app": {{toJson .app.metadata.name}}}'}
`)
	// The usual way to configure a webhook: its URL is a $key of
	// argocd-notifications-secret.
	cmWithSecret := tempFile(t, "cm-secret.yaml", `
apiVersion: v1
kind: ConfigMap
metadata: {name: argocd-notifications-cm}
data:
  service.webhook.hook: |
    url: $hook-url
  template.web: |
    webhook:
      hook: {method: PUT, path: /deploys, body: '{"app": {{toJson .app.metadata.name}}}'}
`)
	secret := tempFile(t, "secret.yaml", `
apiVersion: v1
kind: Secret
metadata: {name: argocd-notifications-secret}
data:
  hook-url: aHR0cHM6Ly9ob29rcy5leGFtcGxlLmNvbS9kZXBsb3lz
`)
	// The same Application seen before at the same revision (the oncePer
	// value was sent then) and at an older one.
	prevSame := tempFile(t, "prev-same.yaml", notifyTestApp)
	prevOlder := tempFile(t, "prev-older.yaml", strings.ReplaceAll(notifyTestApp, "abc1234def", "0000000old"))
	tests := []struct {
		name    string
		args    []string
		want    []string // substrings of the output, in order
		wantErr string
	}{
		{name: "ConfigMap with $key and the Secret", args: []string{"notify", "template", "render", "web", "--app", app, "--service", "hook",
			"--notifications-cm", cmWithSecret, "--notifications-secret", secret}, want: []string{"PUT $hook-url/deploys", "X-Crowsnest-Delivery: ", `{"app": "web"}`}},
		{name: "ConfigMap with $key without the Secret", args: []string{"notify", "template", "render", "web", "--app", app, "--service", "hook",
			"--notifications-cm", cmWithSecret}, wantErr: "hook-url"},
		{name: "--prev at the same revision: not sent again", args: []string{"notify", "trigger", "run", "on-web", "--app", app, "--prev", prevSame, "--notifications-cm", cm},
			want: []string{"0", "true", "abc1234def", "no"}},
		{name: "--prev at an older revision: sent", args: []string{"notify", "trigger", "run", "on-web", "--app", app, "--prev", prevOlder, "--notifications-cm", cm},
			want: []string{"0", "true", "abc1234def", "yes"}},
		{name: "catalog trigger fires", args: []string{"notify", "trigger", "run", "on-deployed", "--app", app},
			want: []string{"CONDITION", "0", "true", "abc1234def", "yes", "app-deployed"}},
		{name: "catalog trigger does not fire", args: []string{"notify", "trigger", "run", "on-sync-running", "--app", app},
			want: []string{"0", "false", "-", "no", "app-sync-running"}},
		{name: "event trigger", args: []string{"notify", "trigger", "run", "on-image-updated", "--app", app, "--event", "image-updated"},
			want: []string{"true", "dry-run", "yes"}},
		{name: "ConfigMap trigger, two conditions", args: []string{"notify", "trigger", "run", "on-web", "--app", app, "--notifications-cm", cm},
			want: []string{"0", "true", "abc1234def", "yes", "1", "false", "-", "no"}},
		{name: "unknown trigger", args: []string{"notify", "trigger", "run", "on-nothing", "--app", app}, wantErr: `no trigger "on-nothing"`},
		{name: "webhook payload", args: []string{"notify", "template", "render", "app-deployed", "--app", app, "--service", "webhook"},
			want: []string{"POST /", `{"event": "app-deployed", "app": "web", "namespace": "argocd", "revision": "abc1234def", "health": "Healthy"}`}},
		{name: "email payload", args: []string{"notify", "template", "render", "app-deployed", "--app", app, "--service", "email"},
			want: []string{"Subject: Deployed: web at abc1234", "Application web is running revision abc1234def and is healthy."}},
		{name: "slack payload", args: []string{"notify", "template", "render", "app-deployed", "--app", app, "--service", "slack"},
			want: []string{`"attachments"`, `"value": "abc1234def"`, `"groupingKey": "argocd/web"`, `"text": ":white_check_mark: Application web`}},
		{name: "ConfigMap template for a named webhook", args: []string{"notify", "template", "render", "web", "--app", app, "--service", "hook", "--notifications-cm", cm},
			wantErr: `--service "hook"`},
		{name: "ConfigMap template, email", args: []string{"notify", "template", "render", "web", "--app", app, "--service", "email", "--notifications-cm", cm},
			want: []string{"Subject: ", "web at abc1234"}},
		{name: "no app", args: []string{"notify", "template", "render", "web", "--service", "email"}, wantErr: "--app and --service are required"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, _, err := execute(t, tc.args...)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error = %v, want it to contain %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			rest := out
			for _, w := range tc.want {
				i := strings.Index(rest, w)
				if i < 0 {
					t.Fatalf("output lacks %q (in order):\n%s", w, out)
				}
				rest = rest[i+len(w):]
			}
		})
	}
}

// TestNewNotifications builds the notifications of a config that names an
// argocd-notifications-cm on the real apiserver, and checks that a new
// Application's on-created reaches the ConfigMap's webhook with its
// secret header resolved, and that state and outbox live in ConfigMaps.
func TestNewNotifications(t *testing.T) {
	ns := env.CreateNamespace(t, "notify-cmd")
	cs, err := kubernetes.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan string, 10)
	srv := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		var body struct{ Event string }
		_ = json.Unmarshal(b, &body)
		got <- r.Method + " " + r.Header.Get("X-Token") + " " + body.Event
	}))
	t.Cleanup(srv.Close)
	ctx := t.Context()
	if _, err := cs.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: config.DefaultArgoCDNotificationsSecret},
		Data:       map[string][]byte{"hook-token": []byte("s3cret")},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: config.DefaultArgoCDNotificationsConfigMap},
		Data: map[string]string{
			"service.webhook.hook": "url: " + srv.URL + "\nheaders:\n- name: X-Token\n  value: $hook-token\n",
			"subscriptions":        "- recipients: [hook]\n  triggers: [on-created]\n",
		},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cfg := config.Default()
	cfg.Notifications.Catalog = true
	cfg.Notifications.ArgoCDConfigMap = config.ArgoCDConfigMapRef{Name: config.DefaultArgoCDNotificationsConfigMap, Secret: config.DefaultArgoCDNotificationsSecret}

	n, out, err := crowsnestd.NewNotifications(ctx, cfg, kubecoretest.Wrap(cs), ns, false, prometheus.NewRegistry(), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Notifications.Services != nil {
		t.Errorf("NewNotifications changed the config it was given: %v", cfg.Notifications.Services)
	}
	done := make(chan struct{}, 2)
	runCtx, cancel := context.WithCancel(ctx)
	go func() { _ = out.Start(runCtx); done <- struct{}{} }()
	go func() { _ = n.Start(runCtx); done <- struct{}{} }()
	t.Cleanup(func() { cancel(); <-done; <-done })

	n.MarkSynced()
	n.OnTransition(nil, notifyApp(t, "web"))
	select {
	case m := <-got:
		// The ConfigMap's webhook keeps Argo CD's GET default; the catalog's
		// templates ask for POST.
		if diff := cmp.Diff("POST s3cret app-created", m); diff != "" {
			t.Errorf("request (-want +got):\n%s", diff)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("no webhook request")
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) { // sleep-ok: poll interval
		recs, err := (&outbox.ConfigMapStore{Client: kubecoretest.Wrap(cs), Namespace: ns}).List(ctx, outbox.ListOptions{State: outbox.StateDelivered})
		if err == nil && len(recs) == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("delivery not recorded as delivered: %v %v", recs, err)
		}
	}
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := env.WriteKubeconfig(kubeconfig); err != nil {
		t.Fatal(err)
	}
	logOut, _, err := execute(t, "notify", "log", "--kubeconfig", kubeconfig, "-n", ns, "--app", "argocd/web")
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"argocd/web", "on-created", "hook", "delivered", "200"} {
		if !strings.Contains(logOut, w) {
			t.Errorf("notify log lacks %q:\n%s", w, logOut)
		}
	}
	cms, err := cs.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var state bool
	for _, c := range cms.Items {
		if strings.HasPrefix(c.Name, "crowsnest-notify-state-") && strings.Contains(c.Data["u-web"], "seen") {
			state = true
		}
	}
	if !state {
		t.Error("no notification state ConfigMap holds the Application")
	}
}

func notifyApp(t *testing.T, name string) *watcher.App {
	t.Helper()
	var obj map[string]any
	if err := notifycmd.ReadManifest(tempFile(t, name+".yaml", notifyTestApp), &obj); err != nil {
		t.Fatal(err)
	}
	a, err := watcher.AppFromObject(&unstructured.Unstructured{Object: obj})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// Under --dry-run the triggers fire as usual, but every message is only
// logged: nothing reaches the service and nothing is stored in the
// cluster.
func TestNewNotificationsDryRunSendsAndStoresNothing(t *testing.T) {
	ns := env.CreateNamespace(t, "notify-dry")
	cs, err := kubernetes.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	var requests atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { requests.Add(1) }))
	t.Cleanup(srv.Close)
	cfg, err := config.Parse([]byte("apiVersion: crowsnest.dev/v1alpha1\nkind: Config\nnotifications:\n  catalog: true\n" +
		"  services:\n    hook: {webhook: {url: " + srv.URL + "}}\n" +
		"  subscriptions:\n    - {recipients: [hook], triggers: [on-created]}\n"))
	if err != nil {
		t.Fatal(err)
	}
	var logs testenv.LogBuffer
	log := slog.New(slog.NewJSONHandler(&logs, nil))
	n, out, err := crowsnestd.NewNotifications(t.Context(), cfg, kubecoretest.Wrap(cs), ns, true, prometheus.NewRegistry(), log, nil)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{}, 2)
	runCtx, cancel := context.WithCancel(t.Context())
	go func() { _ = out.Start(runCtx); done <- struct{}{} }()
	go func() { _ = n.Start(runCtx); done <- struct{}{} }()
	t.Cleanup(func() { cancel(); <-done; <-done })

	n.MarkSynced()
	n.OnTransition(nil, notifyApp(t, "web"))
	for deadline := time.Now().Add(30 * time.Second); !strings.Contains(logs.String(), `"msg":"dry run: would notify"`); time.Sleep(20 * time.Millisecond) { // sleep-ok: poll interval
		if time.Now().After(deadline) {
			t.Fatalf("no dry-run log line:\n%s", logs.String())
		}
	}
	if !strings.Contains(logs.String(), `"service":"hook"`) {
		t.Errorf("the dry-run line does not name the service:\n%s", logs.String())
	}
	if got := requests.Load(); got != 0 {
		t.Errorf("the webhook got %d requests under --dry-run, want 0", got)
	}
	cms, err := cs.CoreV1().ConfigMaps(ns).List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, cm := range cms.Items {
		if strings.HasPrefix(cm.Name, "crowsnest-") {
			t.Errorf("ConfigMap %s written under --dry-run", cm.Name)
		}
	}
}
