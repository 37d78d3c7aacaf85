package watcher_test

import (
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/yaml"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/crowsnest-dev/crowsnest/watcher"
)

// waitTimeout bounds the waits for an event on a channel, as
// testwait.Timeout bounds the polls; informers deliver in milliseconds,
// an apiserver restart takes seconds.
const waitTimeout = 60 * time.Second

// recorder is a watcher.Handler that keeps every event in order.
type recorder struct {
	mu       sync.Mutex
	apps     []watcher.AppEvent
	projects []watcher.ProjectEvent
	notify   chan struct{}
}

func newRecorder() *recorder { return &recorder{notify: make(chan struct{}, 1)} }

func (r *recorder) OnAppEvent(ev watcher.AppEvent) {
	r.mu.Lock()
	r.apps = append(r.apps, ev)
	r.mu.Unlock()
	r.poke()
}

func (r *recorder) OnProjectEvent(ev watcher.ProjectEvent) {
	r.mu.Lock()
	r.projects = append(r.projects, ev)
	r.mu.Unlock()
	r.poke()
}

func (r *recorder) poke() {
	select {
	case r.notify <- struct{}{}:
	default:
	}
}

func (r *recorder) appEvents() []watcher.AppEvent {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]watcher.AppEvent(nil), r.apps...)
}

// waitApp waits for the first app event that matches.
func (r *recorder) waitApp(t *testing.T, match func(watcher.AppEvent) bool) watcher.AppEvent {
	t.Helper()
	deadline := time.After(waitTimeout)
	for {
		evs := r.appEvents()
		for _, ev := range evs {
			if match(ev) {
				return ev
			}
		}
		select {
		case <-r.notify:
		case <-deadline:
			t.Fatalf("no matching application event after %s; saw %d events", waitTimeout, len(evs))
		}
	}
}

func (r *recorder) projectEvents() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, ev := range r.projects {
		p := ev.New
		if p == nil {
			p = ev.Old
		}
		out = append(out, string(ev.Type)+" "+p.Key())
	}
	return out
}

// eventsFor returns the events of one key, in order.
func (r *recorder) eventsFor(key string) []watcher.AppEvent {
	var out []watcher.AppEvent
	for _, ev := range r.appEvents() {
		if ev.Key() == key {
			out = append(out, ev)
		}
	}
	return out
}

func isEvent(typ watcher.EventType, key string) func(watcher.AppEvent) bool {
	return func(ev watcher.AppEvent) bool { return ev.Type == typ && ev.Key() == key }
}

func mustParse(t *testing.T, doc string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(doc), &u.Object); err != nil {
		t.Fatalf("parsing fixture: %v", err)
	}
	return u
}

func createApp(t *testing.T, c dynamic.NamespaceableResourceInterface, ns, name string, labels map[string]string) *unstructured.Unstructured {
	t.Helper()
	u := mustParse(t, appYAML)
	u.SetNamespace(ns)
	u.SetName(name)
	u.SetLabels(labels)
	out, err := c.Namespace(ns).Create(t.Context(), u, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating application %s/%s: %v", ns, name, err)
	}
	return out
}

// appYAML is a typical kustomize Application with images in its status.
const appYAML = `
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata:
  name: guestbook
  annotations:
    argocd-image-updater.argoproj.io/image-list: web=registry.example/guestbook
spec:
  project: default
  source:
    repoURL: https://git.example/apps.git
    path: guestbook
    targetRevision: main
    kustomize:
      images: [registry.example/guestbook:1.0.0]
  destination:
    server: https://kubernetes.default.svc
    namespace: guestbook
`
