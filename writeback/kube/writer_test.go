package kube

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/yaml"

	"github.com/crowsnest-dev/crowsnest/watcher"
)

// createNginxApp creates the Application name with one kustomize image,
// nginx:1.0.0.
func createNginxApp(t *testing.T, dyn dynamic.Interface, ns, name string) {
	t.Helper()
	createApp(t, dyn, ns, `
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: `+name+`}
spec:
  project: default
  destination: {server: https://kubernetes.default.svc, namespace: shop}
  source: {repoURL: https://git.example.com/shop.git, path: deploy, kustomize: {images: ["nginx:1.0.0"]}}
`)
}

func createApp(t *testing.T, dyn dynamic.Interface, ns, doc string) {
	t.Helper()
	var obj map[string]any
	if err := yaml.Unmarshal([]byte(doc), &obj); err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{Object: obj}
	u.SetNamespace(ns)
	if _, err := dyn.Resource(watcher.ApplicationsResource).Namespace(ns).Create(t.Context(), u, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func getSpec(t *testing.T, dyn dynamic.Interface, ns, name string) map[string]any {
	t.Helper()
	u, err := dyn.Resource(watcher.ApplicationsResource).Namespace(ns).Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return u.Object["spec"].(map[string]any)
}

func yamlMap(t *testing.T, doc string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := yaml.Unmarshal([]byte(doc), &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func TestApplyPatchesOnlyOwnedFields(t *testing.T) {
	dyn := dynamic.NewForConfigOrDie(env.Config)
	ns := env.CreateNamespace(t, "wb")
	createApp(t, dyn, ns, `
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: shop}
spec:
  project: default
  destination: {server: https://kubernetes.default.svc, namespace: shop}
  syncPolicy: {automated: {prune: true}}
  source:
    repoURL: https://git.example.com/shop.git
    path: deploy
    targetRevision: main
    kustomize:
      namePrefix: prod-
      images: ["redis:7.0", "base/nginx=nginx:1.0.0"]
`)
	w := &Writer{Client: dyn}
	res, err := w.Apply(t.Context(), ns, "shop", []Override{{SourceIndex: -1, KustomizeImages: []KustomizeImage{
		{Name: "base/nginx", Entry: "base/nginx=nginx:1.1.0"},
		{Name: "ghcr.io/org/sidecar", Entry: "ghcr.io/org/sidecar:2.0.0"},
	}}})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Patched || res.Attempts != 1 {
		t.Errorf("result = %+v, want patched in one attempt", res)
	}
	want := yamlMap(t, `
project: default
destination: {server: https://kubernetes.default.svc, namespace: shop}
syncPolicy: {automated: {prune: true}}
source:
  repoURL: https://git.example.com/shop.git
  path: deploy
  targetRevision: main
  kustomize:
    namePrefix: prod-
    images: ["redis:7.0", "base/nginx=nginx:1.1.0", "ghcr.io/org/sidecar:2.0.0"]
`)
	if diff := cmp.Diff(want, getSpec(t, dyn, ns, "shop")); diff != "" {
		t.Errorf("spec (-want +got):\n%s", diff)
	}

	// The same write again changes nothing and sends no patch.
	again, err := w.Apply(t.Context(), ns, "shop", []Override{{SourceIndex: -1, KustomizeImages: []KustomizeImage{{Name: "base/nginx", Entry: "base/nginx=nginx:1.1.0"}}}})
	if err != nil || again.Patched || again.ResourceVersion != res.ResourceVersion {
		t.Errorf("second write = %+v, %v; want no patch and the same resourceVersion", again, err)
	}
}

func TestApplyMultiSourceHelm(t *testing.T) {
	dyn := dynamic.NewForConfigOrDie(env.Config)
	ns := env.CreateNamespace(t, "wb")
	createApp(t, dyn, ns, `
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: web}
spec:
  project: default
  destination: {server: https://kubernetes.default.svc, namespace: web}
  sources:
    - {repoURL: https://git.example.com/values.git, targetRevision: main, ref: values}
    - repoURL: https://charts.example.com
      chart: web
      targetRevision: 3.2.1
      helm:
        valueFiles: [$values/web.yaml]
        parameters:
          - {name: replicas, value: "3"}
          - {name: image.tag, value: "1.0.0", forceString: true}
    - repoURL: https://charts.example.com
      chart: worker
      targetRevision: 1.0.0
`)
	w := &Writer{Client: dyn}
	_, err := w.Apply(t.Context(), ns, "web", []Override{
		{SourceIndex: 1, HelmParameters: []watcher.HelmParameter{{Name: "image.tag", Value: "1.2.0", ForceString: true}}},
		{SourceIndex: 2, HelmParameters: []watcher.HelmParameter{{Name: "image.name", Value: "ghcr.io/org/worker", ForceString: true}, {Name: "image.tag", Value: "2.0.0", ForceString: true}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	want := yamlMap(t, `
project: default
destination: {server: https://kubernetes.default.svc, namespace: web}
sources:
  - {repoURL: https://git.example.com/values.git, targetRevision: main, ref: values}
  - repoURL: https://charts.example.com
    chart: web
    targetRevision: 3.2.1
    helm:
      valueFiles: [$values/web.yaml]
      parameters:
        - {name: replicas, value: "3"}
        - {name: image.tag, value: "1.2.0", forceString: true}
  - repoURL: https://charts.example.com
    chart: worker
    targetRevision: 1.0.0
    helm:
      parameters:
        - {name: image.name, value: ghcr.io/org/worker, forceString: true}
        - {name: image.tag, value: "2.0.0", forceString: true}
`)
	if diff := cmp.Diff(want, getSpec(t, dyn, ns, "web")); diff != "" {
		t.Errorf("spec (-want +got):\n%s", diff)
	}
	if _, err := w.Apply(t.Context(), ns, "web", []Override{{SourceIndex: 5, HelmParameters: []watcher.HelmParameter{{Name: "x", Value: "y"}}}}); err == nil {
		t.Error("a source index past the end was accepted")
	}
}

// Another writer changes the Application between our read and our patch:
// the patch is refused by resourceVersion, read again and applied on top,
// and both writes survive.
func TestApplyRetriesOnConflict(t *testing.T) {
	dyn := dynamic.NewForConfigOrDie(env.Config)
	ns := env.CreateNamespace(t, "wb")
	createNginxApp(t, dyn, ns, "shop")
	other := 0
	w := &Writer{Client: dyn, beforePatch: func() {
		if other > 0 {
			return
		}
		other++
		// Someone adds their own image entry and a label meanwhile.
		patch := []byte(`{"metadata":{"labels":{"team":"shop"}},"spec":{"source":{"kustomize":{"images":["nginx:1.0.0","redis:7.2"]}}}}`)
		if _, err := dyn.Resource(watcher.ApplicationsResource).Namespace(ns).Patch(context.Background(), "shop", types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			t.Error(err)
		}
	}}
	res, err := w.Apply(t.Context(), ns, "shop", []Override{{SourceIndex: -1, KustomizeImages: []KustomizeImage{{Name: "nginx", Entry: "nginx:1.1.0"}}}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Attempts != 2 || !res.Patched {
		t.Errorf("result = %+v, want patched on the second attempt", res)
	}
	images, _, _ := unstructured.NestedStringSlice(getSpec(t, dyn, ns, "shop"), "source", "kustomize", "images")
	if diff := cmp.Diff([]string{"nginx:1.1.0", "redis:7.2"}, images); diff != "" {
		t.Errorf("images (-want +got):\n%s", diff)
	}
}
