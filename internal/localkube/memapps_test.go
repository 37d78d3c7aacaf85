package localkube

import (
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/crowsnest-dev/crowsnest/watcher"
)

// Local mode's in-memory Applications answer as the apiserver does for
// what kube.Writer asks: a patch pinned to a stale resourceVersion is a
// conflict, a patch of an unknown Application is NotFound.
func TestMemAppsPatchesAsTheAPIServer(t *testing.T) {
	apps := newMemApps().Resource(watcher.ApplicationsResource).Namespace("argocd")
	ctx := t.Context()
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "argoproj.io/v1alpha1", "kind": "Application",
		"metadata": map[string]any{"name": "web"},
		"spec":     map[string]any{"source": map[string]any{"repoURL": "https://example.test/r.git"}},
	}}
	created, err := apps.Create(ctx, obj, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := apps.Create(ctx, obj, metav1.CreateOptions{}); !apierrors.IsAlreadyExists(err) {
		t.Fatalf("second create: %v, want AlreadyExists", err)
	}
	rv := created.GetResourceVersion()
	pinned := []byte(`[{"op":"replace","path":"/metadata/resourceVersion","value":"` + rv + `"},` +
		`{"op":"add","path":"/spec/source/kustomize","value":{"images":["nginx:1.2"]}}]`)
	patched, err := apps.Patch(ctx, "web", types.JSONPatchType, pinned, metav1.PatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got, _, _ := unstructured.NestedStringSlice(patched.Object, "spec", "source", "kustomize", "images"); len(got) != 1 || got[0] != "nginx:1.2" {
		t.Fatalf("patched images %v", got)
	}
	if patched.GetResourceVersion() == rv {
		t.Fatal("resourceVersion unchanged by a patch")
	}
	if _, err := apps.Patch(ctx, "web", types.JSONPatchType, pinned, metav1.PatchOptions{}); !apierrors.IsConflict(err) {
		t.Fatalf("patch pinned to the old resourceVersion: %v, want Conflict", err)
	}
	merged, err := apps.Patch(ctx, "web", types.MergePatchType, []byte(`{"metadata":{"annotations":{"a":"b"}}}`), metav1.PatchOptions{})
	if err != nil || merged.GetAnnotations()["a"] != "b" {
		t.Fatalf("merge patch: %v, annotations %v", err, merged.GetAnnotations())
	}
	got, err := apps.Get(ctx, "web", metav1.GetOptions{})
	if err != nil || got.GetAnnotations()["a"] != "b" || got.GetNamespace() != "argocd" {
		t.Fatalf("get after patches: %v, %v", err, got)
	}
	if _, err := apps.Patch(ctx, "api", types.MergePatchType, []byte(`{}`), metav1.PatchOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("patch of a missing Application: %v, want NotFound", err)
	}
	if _, err := apps.Get(ctx, "web", metav1.GetOptions{}, "status"); !apierrors.IsNotFound(err) {
		t.Fatalf("get of a subresource: %v, want NotFound", err)
	}
}
