package watcher_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/crowsnest-dev/crowsnest/watcher"
)

// A kept Application gives back the same Application: the view, and an
// Object with the same values of the same types (a whole float stays a
// float, an integer an int64), decoded afresh for each caller.
func TestKeptAppGivesBackTheSameApp(t *testing.T) {
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "argoproj.io/v1alpha1", "kind": "Application",
		"metadata": map[string]any{"name": "web", "namespace": "argocd", "generation": int64(3),
			"annotations": map[string]any{"argocd-image-updater.argoproj.io/image-list": "nginx"}},
		"spec": map[string]any{
			"project": "default",
			"source": map[string]any{"repoURL": "https://example.test/r.git", "helm": map[string]any{
				"valuesObject": map[string]any{"replicas": float64(2), "ratio": 0.5, "big": 1e20, "list": []any{float64(1), int64(1), "1", nil, true}},
			}},
		},
	}}
	app, err := watcher.AppFromObject(obj)
	if err != nil {
		t.Fatal(err)
	}
	kept := watcher.KeepApp(app)
	if kept.View().Object != nil {
		t.Fatal("the kept view holds its Object")
	}
	got, again := kept.App(), kept.App()
	if got.Object == again.Object {
		t.Fatal("two callers share one decoded Application")
	}
	if diff := cmp.Diff(app.Object.Object, got.Object.Object); diff != "" {
		t.Fatalf("kept Object (-want +got):\n%s", diff)
	}
	got.Object = nil
	want := *app
	want.Object = nil
	if diff := cmp.Diff(&want, got, cmpopts.IgnoreUnexported(watcher.App{})); diff != "" {
		t.Fatalf("kept view (-want +got):\n%s", diff)
	}
	// A lazy App decodes its Object only when asked, a copy each time,
	// and is kept again without losing it.
	lazy := kept.Lazy()
	if lazy.Object != nil {
		t.Fatal("a lazy App came with its Object decoded")
	}
	d1, d2 := lazy.Decoded(), lazy.Decoded()
	if d1 == nil || d1 == d2 {
		t.Fatalf("Decoded gave %p and %p, want two copies", d1, d2)
	}
	if diff := cmp.Diff(app.Object.Object, d1.Object); diff != "" {
		t.Fatalf("lazy App's Object (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(app.Object.Object, watcher.KeepApp(lazy).App().Object.Object); diff != "" {
		t.Fatalf("a lazy App kept again (-want +got):\n%s", diff)
	}
	if (*watcher.Kept)(nil).Lazy() != nil {
		t.Fatal("nil Kept gave a lazy App")
	}
	if watcher.KeepApp(nil) != nil || (*watcher.Kept)(nil).App() != nil {
		t.Fatal("nil not kept as nil")
	}
}
