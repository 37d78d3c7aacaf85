package kube

import (
	"net/http"
	"slices"
	"sync/atomic"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/crowsnest-dev/crowsnest/watcher"
)

// getCounter counts the GET requests a client makes.
type getCounter struct {
	next http.RoundTripper
	gets *atomic.Int64
}

func (c getCounter) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Method == http.MethodGet {
		c.gets.Add(1)
	}
	return c.next.RoundTrip(r)
}

// ApplyFrom patches from the informer's copy without reading the
// Application; a copy made stale by another writer costs one conflict and
// one read, and that writer's change survives.
func TestApplyFromCachedCopy(t *testing.T) {
	var gets atomic.Int64
	cfg := rest.CopyConfig(env.Config)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return getCounter{next: rt, gets: &gets} })
	dyn := dynamic.NewForConfigOrDie(cfg)
	ns := env.CreateNamespace(t, "wbcache")
	for _, name := range []string{"fresh", "stale"} {
		createNginxApp(t, dyn, ns, name)
	}
	apps := dyn.Resource(watcher.ApplicationsResource).Namespace(ns)
	read := func(name string) *unstructured.Unstructured {
		u, err := apps.Get(t.Context(), name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return u
	}
	override := []Override{{SourceIndex: -1, KustomizeImages: []KustomizeImage{{Name: "nginx", Entry: "nginx:1.1.0"}}}}
	w := &Writer{Client: dyn}

	cached := read("fresh")
	before := gets.Load()
	res, err := w.ApplyFrom(t.Context(), ns, "fresh", cached, override)
	if err != nil {
		t.Fatal(err)
	}
	if n := gets.Load() - before; !res.Patched || res.Attempts != 1 || n != 0 {
		t.Errorf("fresh copy: patched=%v attempts=%d reads=%d, want patched in 1 attempt with no read", res.Patched, res.Attempts, n)
	}

	cached = read("stale")
	other := cached.DeepCopy()
	other.SetLabels(map[string]string{"team": "shop"})
	if _, err := apps.Update(t.Context(), other, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	before = gets.Load()
	res, err = w.ApplyFrom(t.Context(), ns, "stale", cached, override)
	if err != nil {
		t.Fatal(err)
	}
	if n := gets.Load() - before; !res.Patched || res.Attempts != 2 || n != 1 {
		t.Errorf("stale copy: patched=%v attempts=%d reads=%d, want patched in 2 attempts with 1 read", res.Patched, res.Attempts, n)
	}
	for _, name := range []string{"fresh", "stale"} {
		got := read(name)
		images, _, _ := unstructured.NestedStringSlice(got.Object, "spec", "source", "kustomize", "images")
		if !slices.Equal(images, []string{"nginx:1.1.0"}) {
			t.Errorf("%s: images %q, want [nginx:1.1.0]", name, images)
		}
	}
	if l := read("stale").GetLabels()["team"]; l != "shop" {
		t.Errorf("the other writer's label was lost: %q", l)
	}
	if cached.GetLabels()["team"] != "" {
		t.Errorf("ApplyFrom modified the cached copy")
	}
}
