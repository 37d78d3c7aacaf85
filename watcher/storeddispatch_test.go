package watcher

import (
	"io"
	"log/slog"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// appEvents records what a dispatcher hands on.
type appEvents []AppEvent

func (r *appEvents) OnAppEvent(ev AppEvent)      { *r = append(*r, ev) }
func (r *appEvents) OnProjectEvent(ProjectEvent) {}

func mustStore(t *testing.T, obj map[string]any) *storedApp {
	t.Helper()
	s, err := StoreApplication(&unstructured.Unstructured{Object: obj})
	if err != nil {
		t.Fatal(err)
	}
	return s.(*storedApp)
}

func storedVersion(rv string, generation int64, health string, annotations map[string]any) map[string]any {
	meta := map[string]any{"name": "web", "namespace": "apps", "uid": "u1", "resourceVersion": rv, "generation": generation}
	if annotations != nil {
		meta["annotations"] = annotations
	}
	return map[string]any{
		"apiVersion": "argoproj.io/v1alpha1", "kind": "Application", "metadata": meta,
		"spec":   map[string]any{"project": "default", "source": map[string]any{"repoURL": "https://example.test/r.git"}},
		"status": map[string]any{"health": map[string]any{"status": health}},
	}
}

// The dispatcher decides what changed from the stored JSON: versions
// that differ only in resourceVersion and generation are filtered, any
// kept field that differs makes an event, and the same resourceVersion
// is a resync; the events' Apps decode with the version they came from.
func TestStoredDispatchDecidesWithoutDecoding(t *testing.T) {
	v1 := mustStore(t, storedVersion("10", 1, "Healthy", nil))
	v2 := mustStore(t, storedVersion("11", 2, "Healthy", nil))                            // bookkeeping only
	v3 := mustStore(t, storedVersion("12", 2, "Healthy", map[string]any{"team": "shop"})) // an annotation
	v4 := mustStore(t, storedVersion("13", 2, "Degraded", map[string]any{"team": "shop"}))

	var got appEvents
	d := &dispatcher{handler: &got, log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	d.stored(addedInitially, nil, v1)
	d.stored(Updated, v1, v2)
	d.stored(Updated, v2, v3)
	d.stored(Updated, v3, v3)
	d.stored(Updated, v3, v4)
	d.stored(Deleted, v4, nil)

	var desc []string
	for _, ev := range got {
		app := ev.New
		if app == nil {
			app = ev.Old
		}
		desc = append(desc, string(ev.Type)+" rv="+app.ResourceVersion+" health="+app.HealthStatus)
	}
	want := []string{
		"added rv=10 health=Healthy",
		"updated rv=12 health=Healthy",
		"resync rv=12 health=Healthy",
		"updated rv=13 health=Degraded",
		"deleted rv=13 health=Degraded",
	}
	if diff := cmp.Diff(want, desc); diff != "" {
		t.Fatalf("events (-want +got):\n%s", diff)
	}
	if !got[0].Initial {
		t.Error("an Application of the initial list came without Initial")
	}
	if got[3].New.Object != nil || got[3].Old.Object != nil {
		t.Error("the dispatcher decoded an Object")
	}
	// The Object comes back whole, resourceVersion and generation too.
	wantObj := storedVersion("13", 2, "Degraded", map[string]any{"team": "shop"})
	if diff := cmp.Diff(wantObj, got[3].New.Decoded().Object); diff != "" {
		t.Errorf("decoded Object (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(wantObj, got[3].Keep().App().Object.Object); diff != "" {
		t.Errorf("kept Object (-want +got):\n%s", diff)
	}
}

// An Application whose fields have the wrong shape is stored (the
// informer keeps it) but never handed on; a readable version after it
// arrives as Added.
func TestStoredDispatchSkipsUnreadable(t *testing.T) {
	bad := storedVersion("20", 1, "Healthy", nil)
	bad["spec"].(map[string]any)["project"] = map[string]any{"not": "a string"}
	sBad := mustStore(t, bad)
	if sBad.err == nil || sBad.view != nil {
		t.Fatalf("unreadable Application stored with view %v, err %v", sBad.view, sBad.err)
	}
	sGood := mustStore(t, storedVersion("21", 2, "Healthy", nil))

	var got appEvents
	d := &dispatcher{handler: &got, log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	d.stored(Added, nil, sBad)
	d.stored(Updated, sBad, sGood)
	d.stored(Deleted, sBad, nil)
	if len(got) != 1 || got[0].Type != Added || got[0].New.ResourceVersion != "21" {
		t.Fatalf("events = %+v, want one Added for resourceVersion 21", got)
	}
}
