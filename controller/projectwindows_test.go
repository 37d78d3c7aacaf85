package controller_test

import (
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/crowsnest-dev/crowsnest/config"
	"github.com/crowsnest-dev/crowsnest/controller"
	"github.com/crowsnest-dev/crowsnest/internal/testenv"
	"github.com/crowsnest-dev/crowsnest/internal/testwait"
	"github.com/crowsnest-dev/crowsnest/registry"
	"github.com/crowsnest-dev/crowsnest/watcher"
	"github.com/crowsnest-dev/crowsnest/writeback/kube"
)

// An AppProject's spec.syncWindows, read from the real apiserver, govern
// crowsnest's write-backs for that project's Applications only: the
// frozen project's update is held, the other project's is written; when
// the project's window is removed, the held update goes out.
func TestAppProjectWindowsGovernWriteBacks(t *testing.T) {
	_, image := appRegistry(t)

	ns := env.CreateNamespace(t, "projwin")
	var proj map[string]any
	if err := yaml.Unmarshal([]byte(`
apiVersion: argoproj.io/v1alpha1
kind: AppProject
metadata: {name: payments}
spec:
  syncWindows:
    - {kind: deny, schedule: "* * * * *", duration: 2h, applications: ["*"], timeZone: Europe/Berlin}
`), &proj); err != nil {
		t.Fatal(err)
	}
	projects := dynClient(t).Resource(testenv.AppProjectsGVR).Namespace(ns)
	pu := &unstructured.Unstructured{Object: proj}
	if _, err := projects.Create(t.Context(), pu, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, a := range []struct{ name, project string }{{"frozen", "payments"}, {"free", "default"}} {
		u := createApp(t, ns, a.name)
		u.SetAnnotations(map[string]string{"argocd-image-updater.argoproj.io/image-list": image})
		if err := unstructured.SetNestedField(u.Object, a.project, "spec", "project"); err != nil {
			t.Fatal(err)
		}
		if _, err := apps(t).Namespace(ns).Update(t.Context(), u, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		setStatus(t, ns, a.name, map[string]any{"summary": map[string]any{"images": []any{image + ":1.0.0"}}})
	}

	images, events, logs, log := watchedImageReconciler(t)
	engine := &controller.Engine{
		Sources: []controller.Source{&watcher.KubeSource{Client: dynClient(t), Namespaces: []string{ns},
			Projects: true, Log: log}},
		Reconciler: images,
		Log:        log,
	}
	images.Queue = noFirstPass{engine}
	images.Windows = &controller.WindowSource{Engine: engine, Config: config.Default, Log: log}
	runEngine(t, engine)

	kustomize := func(name string) []string {
		u, err := apps(t).Namespace(ns).Get(t.Context(), name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		imgs, _, _ := unstructured.NestedStringSlice(u.Object, "spec", "source", "kustomize", "images")
		return imgs
	}
	testwait.For(t, "free to be updated", func() bool { return len(kustomize("free")) == 1 })
	testwait.For(t, "frozen to be held", func() bool { return images.Pending(ns + "/frozen") })
	if imgs := kustomize("frozen"); len(imgs) != 0 {
		t.Fatalf("frozen was written during its project's deny window: %v", imgs)
	}
	if !events.has(ns+"/frozen", controller.EventImageUpdateHeld, "AppProject "+ns+"/payments spec.syncWindows[0]") {
		t.Errorf("no ImageUpdateHeld Event naming the project's window; events: %v", events.all())
	}
	// Reconciled again while still held: the hold is not announced again.
	for range 3 {
		engine.Enqueue(ns + "/frozen")
	}
	testwait.For(t, "frozen reconciled again while held", func() bool {
		return strings.Contains(logs.String(), `msg="image update still held by a sync window"`)
	})
	if n := events.count(ns+"/frozen", controller.EventImageUpdateHeld); n != 1 {
		t.Errorf("%d ImageUpdateHeld Events for one hold, want 1: %v", n, events.all())
	}

	// The project lifts its window: the held update goes out.
	cur, err := projects.Get(t.Context(), "payments", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	unstructured.RemoveNestedField(cur.Object, "spec", "syncWindows")
	if _, err := projects.Update(t.Context(), cur, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	testwait.For(t, "frozen to be written once its project allows it", func() bool { return len(kustomize("frozen")) == 1 })
}

// msgEvents keeps every Event as "namespace/name reason: message".
type msgEvents struct {
	mu   sync.Mutex
	list []string
}

func (m *msgEvents) Event(object runtime.Object, _, reason, msg string) {
	ref, _ := object.(*corev1.ObjectReference)
	if ref == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.list = append(m.list, ref.Namespace+"/"+ref.Name+" "+reason+": "+msg)
}

func (m *msgEvents) all() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]string(nil), m.list...)
}

func (m *msgEvents) count(key, reason string) int {
	n := 0
	for _, e := range m.all() {
		if strings.HasPrefix(e, key+" "+reason+": ") {
			n++
		}
	}
	return n
}

func (m *msgEvents) has(key, reason, text string) bool {
	for _, e := range m.all() {
		if strings.HasPrefix(e, key+" "+reason+": ") && strings.Contains(e, text) {
			return true
		}
	}
	return false
}

// An AppProject whose sync window cannot compile (Feb 30 never comes) holds
// its Applications' write-backs, as Argo CD refuses their syncs, instead of
// acting on a partial set; fixing the project releases them.
func TestBrokenAppProjectWindowHoldsWriteBacks(t *testing.T) {
	_, image := appRegistry(t)

	ns := env.CreateNamespace(t, "projbroken")
	var proj map[string]any
	if err := yaml.Unmarshal([]byte(`
apiVersion: argoproj.io/v1alpha1
kind: AppProject
metadata: {name: payments}
spec:
  syncWindows:
    - {kind: deny, schedule: "0 0 30 2 *", duration: 1h, applications: ["*"]}
`), &proj); err != nil {
		t.Fatal(err)
	}
	projects := dynClient(t).Resource(testenv.AppProjectsGVR).Namespace(ns)
	if _, err := projects.Create(t.Context(), &unstructured.Unstructured{Object: proj}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	u := createApp(t, ns, "shop")
	u.SetAnnotations(map[string]string{"argocd-image-updater.argoproj.io/image-list": image})
	if err := unstructured.SetNestedField(u.Object, "payments", "spec", "project"); err != nil {
		t.Fatal(err)
	}
	if _, err := apps(t).Namespace(ns).Update(t.Context(), u, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	setStatus(t, ns, "shop", map[string]any{"summary": map[string]any{"images": []any{image + ":1.0.0"}}})

	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	events := &msgEvents{}
	images := &controller.ImageReconciler{Registry: &registry.Client{}, Writer: &kube.Writer{Client: dynClient(t)}, Events: events, Log: log}
	engine := &controller.Engine{
		Sources:    []controller.Source{&watcher.KubeSource{Client: dynClient(t), Namespaces: []string{ns}, Projects: true, Log: log}},
		Reconciler: images,
		Log:        log,
	}
	ws := &controller.WindowSource{Engine: engine, Config: config.Default, Log: log}
	images.Queue, images.Windows = noFirstPass{engine}, ws
	runEngine(t, engine)

	// Pending turns true just before the Event is recorded: wait for both.
	testwait.For(t, "shop to be held, with an ImageUpdateHeld Event naming the broken project", func() bool {
		return images.Pending(ns+"/shop") && events.has(ns+"/shop", controller.EventImageUpdateHeld, "invalid sync windows")
	})
	cur, err := projects.Get(t.Context(), "payments", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	unstructured.RemoveNestedField(cur.Object, "spec", "syncWindows")
	if _, err := projects.Update(t.Context(), cur, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	testwait.For(t, "shop to be written once the project is fixed", func() bool {
		got, err := apps(t).Namespace(ns).Get(t.Context(), "shop", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		imgs, _, _ := unstructured.NestedStringSlice(got.Object, "spec", "source", "kustomize", "images")
		return len(imgs) == 1
	})
}
