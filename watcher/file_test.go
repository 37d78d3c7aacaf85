package watcher_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/dynamic"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/crowsnest-dev/crowsnest/internal/testwait"
	"github.com/crowsnest-dev/crowsnest/watcher"
)

// multiSourceYAML is a multi-source Helm Application with a full status.
const multiSourceYAML = `
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata:
  name: shop
  labels: {team: payments}
  annotations:
    notifications.argoproj.io/subscribe.on-deployed.slack: deploys
    kubectl.kubernetes.io/last-applied-configuration: '{"huge": "copy"}'
spec:
  project: payments
  sources:
    - repoURL: https://charts.example
      chart: shop
      targetRevision: 1.2.3
      helm:
        valueFiles: [$values/shop/values.yaml]
        parameters:
          - {name: image.tag, value: "2.0.0"}
    - repoURL: https://git.example/values.git
      targetRevision: main
      ref: values
  destination: {name: prod, namespace: shop}
status:
  sync: {status: OutOfSync, revision: abc123}
  health: {status: Healthy}
  operationState:
    phase: Succeeded
    startedAt: "2026-11-22T09:59:00Z"
    operation:
      sync: {revision: abc123}
    syncResult:
      revision: abc123
      resources: [{group: apps, version: v1, kind: Deployment, namespace: shop, name: shop}]
  summary:
    images: [registry.example/shop:2.0.0]
  reconciledAt: "2026-11-22T10:00:00Z"
  resources: [{kind: Deployment, name: shop, status: Synced}]
  history: [{id: 1, revision: abc000, deployedAt: "2026-11-21T10:00:00Z"}]
`

// normalize drops what only the apiserver sets, so a view from a file and a
// view from the informer can be compared.
func normalize(a *watcher.App) *watcher.App {
	c := *a
	c.UID, c.ResourceVersion = "", ""
	obj := a.Decoded().DeepCopy()
	for _, f := range []string{"uid", "resourceVersion", "generation", "creationTimestamp"} {
		delete(obj.Object["metadata"].(map[string]any), f)
	}
	c.Object = obj
	return &c
}

func TestFileSourceMatchesInformer(t *testing.T) {
	ns := env.CreateNamespace(t, "file-vs-kube")
	dyn, err := dynamic.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	apps := dyn.Resource(watcher.ApplicationsResource)
	kubeRec := newRecorder()
	startSource(t, &watcher.KubeSource{Client: dyn, Namespaces: []string{ns}}, kubeRec)

	obj := mustParse(t, multiSourceYAML)
	obj.SetNamespace(ns)
	created, err := apps.Namespace(ns).Create(t.Context(), obj, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	created.Object["status"] = obj.Object["status"]
	if _, err := apps.Namespace(ns).Update(t.Context(), created, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	key := ns + "/shop"
	kubeEv := kubeRec.waitApp(t, func(ev watcher.AppEvent) bool {
		return ev.Key() == key && ev.New != nil && ev.New.HealthStatus == "Healthy"
	})

	dir := t.TempDir()
	// The file names no namespace; the source's default gives it one.
	if err := os.WriteFile(filepath.Join(dir, "shop.yaml"), []byte(multiSourceYAML), 0o600); err != nil {
		t.Fatal(err)
	}
	fileRec := newRecorder()
	startSource(t, &watcher.FileSource{Dir: dir, Namespace: ns}, fileRec)
	fileEv := fileRec.waitApp(t, isEvent(watcher.Added, key))

	if diff := cmp.Diff(normalize(kubeEv.New), normalize(fileEv.New), cmpopts.IgnoreUnexported(watcher.App{})); diff != "" {
		t.Errorf("file view differs from informer view (-kube +file):\n%s", diff)
	}
	// The shared view of a multi-source app, checked once field by field.
	got := fileEv.New
	if !got.MultiSource || len(got.Sources) != 2 || got.Sources[0].Helm.Parameters[0].Value != "2.0.0" || got.Sources[1].Ref != "values" {
		t.Errorf("multi-source view wrong: %+v", got.Sources)
	}
	if diff := cmp.Diff([]string{"registry.example/shop:2.0.0"}, got.Images); diff != "" {
		t.Errorf("images (-want +got):\n%s", diff)
	}
	for _, dropped := range []string{"reconciledAt", "resources", "history"} {
		if _, ok := got.Object.Object["status"].(map[string]any)[dropped]; ok {
			t.Errorf("status.%s not trimmed", dropped)
		}
	}
	if _, ok := got.Annotations["kubectl.kubernetes.io/last-applied-configuration"]; ok {
		t.Error("last-applied-configuration annotation not trimmed")
	}
}

func TestFileSourceChanges(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	two := appYAML + "\n---\n" + strings.Replace(appYAML, "name: guestbook", "name: second", 1)
	write("apps.yaml", two)
	write("notes.txt", "not yaml at all: [")
	write("other.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: ignored}\n")

	reg := prometheus.NewRegistry()
	rec := newRecorder()
	startSource(t, &watcher.FileSource{Dir: dir, Metrics: watcher.NewMetrics(reg)}, rec)
	rec.waitApp(t, isEvent(watcher.Added, "argocd/guestbook"))
	rec.waitApp(t, isEvent(watcher.Added, "argocd/second"))

	// A broken edit keeps the last good objects: no delete, an invalid count.
	write("apps.yaml", "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata: [broken\n")
	testwait.For(t, "the broken file to be counted", func() bool {
		return metricSum(t, reg, "crowsnest_watch_objects_invalid_total") >= 1
	})
	// Then a real change to one of them, and the other removed.
	write("apps.yaml", strings.Replace(appYAML, "guestbook:1.0.0", "guestbook:1.1.0", 1))
	ev := rec.waitApp(t, isEvent(watcher.Updated, "argocd/guestbook"))
	if got := ev.New.Sources[0].Kustomize.Images[0]; got != "registry.example/guestbook:1.1.0" {
		t.Errorf("updated image = %q", got)
	}
	rec.waitApp(t, isEvent(watcher.Deleted, "argocd/second"))
	if err := os.Remove(filepath.Join(dir, "apps.yaml")); err != nil {
		t.Fatal(err)
	}
	rec.waitApp(t, isEvent(watcher.Deleted, "argocd/guestbook"))

	var got []string
	for _, ev := range rec.appEvents() {
		got = append(got, string(ev.Type)+" "+ev.Key())
	}
	want := []string{
		"added argocd/guestbook", "added argocd/second",
		"updated argocd/guestbook", "deleted argocd/second",
		"deleted argocd/guestbook",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
}
