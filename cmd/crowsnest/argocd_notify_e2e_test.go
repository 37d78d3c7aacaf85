package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"

	"github.com/crowsnest-dev/crowsnest/internal/argocdenv"
	"github.com/crowsnest-dev/crowsnest/internal/testenv"
	"github.com/crowsnest-dev/crowsnest/notify/outbox"
	"github.com/crowsnest-dev/crowsnest/writeback/kube"
)

// Argo CD's notification catalog, unchanged, with the real application
// controller's transitions: a first automated sync (on-sync-succeeded,
// on-deployed), a commit whose manifest the apiserver rejects
// (on-sync-failed), a commit that fixes it (on-sync-succeeded and
// on-deployed for that revision), and a running ConfigMap turning
// Degraded (on-health-degraded). Each reaches the webhook exactly once: after each
// step the test waits until Argo CD has compared the Application twice
// more and crowsnest has evaluated every change up to a witness
// annotation set after those, then counts.
func TestE2EArgoCDNotificationsFireOnceFromRealTransitions(t *testing.T) {
	sink := startArgoNotifySink(t)
	w := newArgoWorldWith(t, "web-notify", func(*argoWorld) string {
		return argoSubscriptions("on-deployed", "on-sync-succeeded", "on-sync-failed", "on-health-degraded")
	}, argocdenv.Options{AppResync: 5 * time.Second}, "{automated: {enabled: false}, retry: {limit: 0}}")
	createArgoNotificationsCM(t, w, sink.URL)
	d := w.daemon(t, "--config", writeArgoNotifyConfig(t, w, false, ""))
	d.waitLog(t, `"msg":"engine caches synced"`)
	s := &notifySettler{w: w, sink: sink}

	// 1. Argo CD's first sync. (Automated sync is switched on rather than
	// added: Argo CD removes an empty syncPolicy from the spec with a
	// patch that also removes anything added meanwhile.)
	patchApp(t, w.ns, w.app, map[string]any{"spec": map[string]any{"syncPolicy": map[string]any{"automated": map[string]any{"enabled": true}}}})
	w.waitDeployed(t, w.image+":1.0.0")
	s.settle(t, "the first sync", map[string]int{"on-deployed": 1, "on-sync-succeeded": 1})

	// 2. A manifest the apiserver rejects: the sync fails. (Without the
	// retry limit of 0 above, Argo CD v3 retries an automated sync five
	// times, over minutes, with the phase Running in between.)
	failed := w.git.Seed(t, "deploy", "main", map[string]string{
		"web/kustomization.yaml": "resources: [deployment.yaml, broken.yaml]\n",
		"web/broken.yaml":        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: Not_A_Valid_Name}\ndata: {a: b}\n",
	}, "a broken manifest")
	argoRefresh(t, w)
	app := argoAppWait(t, w, "Argo CD's sync of the broken manifest to fail", func(app *unstructured.Unstructured) bool {
		phase, _, _ := unstructured.NestedString(app.Object, "status", "operationState", "phase")
		rev, _, _ := unstructured.NestedString(app.Object, "status", "operationState", "syncResult", "revision")
		return rev == failed && (phase == "Failed" || phase == "Error")
	})
	msg, _, _ := unstructured.NestedString(app.Object, "status", "operationState", "message")
	t.Logf("Argo CD's failed sync: %s", msg)
	s.settle(t, "the failed sync", map[string]int{"on-deployed": 1, "on-sync-succeeded": 1, "on-sync-failed": 1})

	// 3. A healthy ConfigMap instead: the sync succeeds.
	fixed := w.git.Seed(t, "deploy", "main", map[string]string{
		"web/kustomization.yaml": "resources: [deployment.yaml, status.yaml]\n",
		"web/status.yaml":        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: status}\ndata: {health: Healthy}\n",
	}, "a healthy ConfigMap")
	argoRefresh(t, w)
	argoAppWait(t, w, "Argo CD to sync the fix", func(app *unstructured.Unstructured) bool {
		phase, _, _ := unstructured.NestedString(app.Object, "status", "operationState", "phase")
		rev, _, _ := unstructured.NestedString(app.Object, "status", "operationState", "syncResult", "revision")
		health, _, _ := unstructured.NestedString(app.Object, "status", "health", "status")
		return rev == fixed && phase == "Succeeded" && health == "Healthy"
	})
	s.settle(t, "the fix", map[string]int{"on-deployed": 2, "on-sync-succeeded": 2, "on-sync-failed": 1})

	// 4. The running ConfigMap turns Degraded (the test environment's
	// health customization reads its data); Argo CD notices the live change.
	cm, err := kubernetes.NewForConfigOrDie(env.Config).CoreV1().ConfigMaps(w.dest).Get(t.Context(), "status", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cm.Data["health"] = "Degraded"
	if _, err := kubernetes.NewForConfigOrDie(env.Config).CoreV1().ConfigMaps(w.dest).Update(t.Context(), cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	argoAppWait(t, w, "Argo CD to report the Application Degraded", func(app *unstructured.Unstructured) bool {
		health, _, _ := unstructured.NestedString(app.Object, "status", "health", "status")
		return health == "Degraded"
	})
	s.settle(t, "the degradation", map[string]int{"on-deployed": 2, "on-sync-succeeded": 2, "on-sync-failed": 1, "on-health-degraded": 1})
	for _, b := range sink.bodies("on-sync-failed") {
		if !strings.Contains(b, "Not_A_Valid_Name") {
			t.Errorf("the on-sync-failed message does not carry Argo CD's error: %q", b)
		}
	}
}

// crowsnest's own on-image-updated (a Git write-back) reaches the webhook
// before Argo CD's catalog on-deployed for the commit it wrote, with the
// real Argo CD syncing that commit. The first sync, before crowsnest
// started, is a baseline: no on-deployed for it.
func TestE2EArgoCDNotificationImageUpdatedBeforeDeployed(t *testing.T) {
	sink := startArgoNotifySink(t)
	w := newArgoWorld(t, "web-notify-git", func(w *argoWorld) string {
		return "    argocd-image-updater.argoproj.io/image-list: web=" + w.image + ":^1\n" +
			"    argocd-image-updater.argoproj.io/write-back-method: git:secret:" + w.ns + "/git-creds\n" +
			argoSubscriptions("on-image-updated", "on-deployed")
	}, argocdenv.Options{AppResync: 5 * time.Second})
	createSecret(t, w.ns, "git-creds", map[string]string{"username": "bot", "password": "s3cret-token", "url": w.git.URL})
	createArgoNotificationsCM(t, w, sink.URL)
	w.daemon(t, "--config", writeArgoNotifyConfig(t, w, true, ""))
	app := w.waitDeployed(t, w.image+":1.1.0")
	head := w.git.Head(t, "deploy", "main")
	if rev, _, _ := unstructured.NestedString(app.Object, "status", "operationState", "syncResult", "revision"); rev != head {
		t.Fatalf("Argo CD synced %s, want crowsnest's commit %s", rev, head)
	}
	s := &notifySettler{w: w, sink: sink}
	s.settle(t, "the update's sync", map[string]int{"on-image-updated": 1, "on-deployed": 1})
	order := sink.order()
	if i, j := slices.Index(order, "on-image-updated"), slices.Index(order, "on-deployed"); i > j {
		t.Errorf("messages arrived in the order %v, want on-image-updated before on-deployed", order)
	}
	var updated struct{ Commit, To string }
	if err := json.Unmarshal([]byte(sink.bodies("on-image-updated")[0]), &updated); err != nil {
		t.Fatal(err)
	}
	if updated.Commit != head || updated.To != "1.1.0" {
		t.Errorf("on-image-updated announced commit %s and tag %s, want %s (what Argo CD deployed) and 1.1.0", updated.Commit, updated.To, head)
	}
}

// argoRefresh asks Argo CD to compare the Application with Git now, as a
// Git webhook would: its periodic comparison reuses the branch's resolved
// revision (the repo server caches it for minutes) and misses a new
// commit meanwhile; a refresh resolves it again.
func argoRefresh(t *testing.T, w *argoWorld) {
	t.Helper()
	patchApp(t, w.ns, w.app, map[string]any{"metadata": map[string]any{"annotations": map[string]any{kube.RefreshAnnotation: "normal"}}})
}

// argoSubscriptions is an annotations block subscribing the webhook
// "hook" to each trigger, and to the test's witness.
func argoSubscriptions(triggers ...string) string {
	var b strings.Builder
	for _, tr := range append(triggers, "on-witness") {
		fmt.Fprintf(&b, "    notifications.argoproj.io/subscribe.%s.hook: \"\"\n", tr)
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// createArgoNotificationsCM creates argocd-notifications-cm in the
// world's namespace: Argo CD's catalog as its release ships it (read from
// the module, not copied here) and a webhook service "hook" posting to
// sinkURL.
func createArgoNotificationsCM(t *testing.T, w *argoWorld, sinkURL string) {
	t.Helper()
	data, err := testenv.ArgoCDModuleFile("notifications_catalog/install.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var cm corev1.ConfigMap
	if err := yaml.Unmarshal(data, &cm); err != nil {
		t.Fatal(err)
	}
	if cm.Name != "argocd-notifications-cm" || cm.Data["trigger.on-deployed"] == "" {
		t.Fatalf("Argo CD's catalog is not the ConfigMap expected: %s with %d keys", cm.Name, len(cm.Data))
	}
	cm.Namespace = w.ns
	cm.Data["service.webhook.hook"] = "url: " + sinkURL + "/hook\n"
	if _, err := kubernetes.NewForConfigOrDie(env.Config).CoreV1().ConfigMaps(w.ns).Create(t.Context(), &cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// witnessAnnotation is set by the test after the transitions it counts;
// the on-witness trigger announces each value once.
const witnessAnnotation = "e2e.crowsnest.dev/witness"

// writeArgoNotifyConfig writes crowsnest's config: it reads
// argocd-notifications-cm, adds crowsnest's catalog (on-image-updated,
// on-pr-merged, ...) when catalog is set, and the test's on-witness
// trigger; extra is more of the config's top-level fields.
func writeArgoNotifyConfig(t *testing.T, w *argoWorld, catalog bool, extra string) string {
	t.Helper()
	path := filepath.Join(w.dir, "crowsnest.yaml")
	writeFile(t, path, fmt.Sprintf(`apiVersion: crowsnest.dev/v1alpha1
kind: Config
notifications:
  catalog: %t
  argocdConfigMap: {name: argocd-notifications-cm}
  triggers:
    on-witness:
      - when: "'%[2]s' in app.metadata.annotations"
        oncePer: "app.metadata.annotations['%[2]s']"
        send: [witness]
  templates:
    witness:
      message: 'witness {{index .app.metadata.annotations "%[2]s"}}'
%[3]s`, catalog, witnessAnnotation, extra))
	return path
}

// notifySettler brings a test to a point where every notification the
// transitions so far can cause has been delivered.
type notifySettler struct {
	w       *argoWorld
	sink    *argoNotifySink
	witness int
}

// settle waits until Argo CD has compared the Application twice more
// (a repeat of what it reported would show up by then), sets a new
// witness annotation and waits for its message (crowsnest evaluates an
// Application's changes in order, so every earlier one has been
// evaluated and its deliveries recorded), waits until the delivery log
// holds nothing unsent, and compares the messages received per trigger
// with want.
func (s *notifySettler) settle(t *testing.T, step string, want map[string]int) {
	t.Helper()
	app, err := appsIn(s.w.ns).Get(t.Context(), s.w.app, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	argoReconciledAgain(t, s.w, app, 2)
	s.witness++
	patchApp(t, s.w.ns, s.w.app, map[string]any{"metadata": map[string]any{"annotations": map[string]any{witnessAnnotation: fmt.Sprint(s.witness)}}})
	witness := fmt.Sprintf("witness %d", s.witness)
	waitFor(t, "the "+witness+" message", func() bool { return slices.Contains(s.sink.bodies("on-witness"), witness) })
	var recs []outbox.Record
	waitFor(t, "the delivery log to hold nothing unsent", func() bool {
		recs = s.deliveries(t)
		return !slices.ContainsFunc(recs, func(r outbox.Record) bool { return !r.Terminal() })
	})
	got := s.sink.counts()
	delete(got, "on-witness")
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("after %s: messages per trigger (-want +got):\n%s\nbodies: %q", step, diff, s.sink.all())
	}
	logged := map[string]int{}
	for i := range recs {
		if tr := recs[i].Trigger; tr != "on-witness" {
			logged[tr]++
		}
	}
	if diff := cmp.Diff(want, logged); diff != "" {
		t.Errorf("after %s: delivery log records per trigger (-want +got):\n%s", step, diff)
	}
}

// deliveries reads the delivery log through `crowsnest notify log`.
func (s *notifySettler) deliveries(t *testing.T) []outbox.Record {
	t.Helper()
	out, err := exec.CommandContext(t.Context(), binary, "notify", "log", "--app", s.w.ns+"/"+s.w.app, "-o", "json",
		"--kubeconfig", s.w.kubeconfig, "-n", s.w.ns).Output()
	if err != nil {
		t.Fatalf("crowsnest notify log: %v", err)
	}
	var recs []outbox.Record
	if err := json.Unmarshal(out, &recs); err != nil {
		t.Fatal(err)
	}
	return recs
}

// argoNotifySink is the webhook: it records each request's body under
// the trigger its delivery belongs to, told by the message (Argo CD's
// catalog messages are text, crowsnest's JSON).
type argoNotifySink struct {
	*httptest.Server
	mu       sync.Mutex
	triggers []string
	texts    []string
}

func startArgoNotifySink(t *testing.T) *argoNotifySink {
	t.Helper()
	s := &argoNotifySink{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		s.mu.Lock()
		defer s.mu.Unlock()
		s.triggers = append(s.triggers, catalogTrigger(string(b)))
		s.texts = append(s.texts, string(b))
	}))
	t.Cleanup(s.Close)
	return s
}

// catalogTrigger tells which trigger sent a message.
func catalogTrigger(body string) string {
	for _, m := range []struct{ text, trigger string }{
		{"is now running new version", "on-deployed"},
		{"has been successfully synced", "on-sync-succeeded"},
		{"has failed at", "on-sync-failed"},
		{"has degraded", "on-health-degraded"},
		{`"event": "image-updated"`, "on-image-updated"},
		{`"event": "pr-opened"`, "on-pr-opened"},
		{`"event": "pr-updated"`, "on-pr-updated"},
		{`"event": "pr-merged"`, "on-pr-merged"},
		{"witness ", "on-witness"},
	} {
		if strings.Contains(body, m.text) {
			return m.trigger
		}
	}
	return "unknown"
}

func (s *argoNotifySink) counts() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]int{}
	for _, tr := range s.triggers {
		out[tr]++
	}
	return out
}

func (s *argoNotifySink) order() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.triggers)
}

func (s *argoNotifySink) bodies(trigger string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for i, tr := range s.triggers {
		if tr == trigger {
			out = append(out, strings.TrimSpace(s.texts[i]))
		}
	}
	return out
}

func (s *argoNotifySink) all() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.texts)
}
