package kube

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	"github.com/crowsnest-dev/crowsnest/watcher"
)

// PlanFrom sends nothing (the resourceVersion stays), and its patch,
// applied to the Application it was planned on, gives the spec that
// ApplyFrom then writes.
func TestPlanFromIsWhatApplyFromPatches(t *testing.T) {
	dyn := dynamic.NewForConfigOrDie(env.Config)
	ns := env.CreateNamespace(t, "wbplan")
	createApp(t, dyn, ns, `
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: shop}
spec:
  project: default
  destination: {server: https://kubernetes.default.svc, namespace: shop}
  source:
    repoURL: https://git.example.com/shop.git
    path: deploy
    kustomize: {images: ["redis:7.0", "base/nginx=nginx:1.0.0"]}
`)
	apps := dyn.Resource(watcher.ApplicationsResource).Namespace(ns)
	before, err := apps.Get(t.Context(), "shop", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w := &Writer{Client: dyn}
	overrides := []Override{{SourceIndex: -1, KustomizeImages: []KustomizeImage{
		{Name: "base/nginx", Entry: "base/nginx=nginx:1.2.0"}, {Name: "busybox", Entry: "busybox:1.37"},
	}}}

	p, err := w.PlanFrom(t.Context(), ns, "shop", nil, overrides)
	if err != nil {
		t.Fatal(err)
	}
	if p.Type != types.JSONPatchType || p.ResourceVersion != before.GetResourceVersion() || p.Namespace != ns || p.Name != "shop" {
		t.Errorf("plan %+v", p)
	}
	after, err := apps.Get(t.Context(), "shop", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if after.GetResourceVersion() != before.GetResourceVersion() {
		t.Fatalf("PlanFrom wrote: resourceVersion %s -> %s", before.GetResourceVersion(), after.GetResourceVersion())
	}

	raw, err := json.Marshal(before.Object)
	if err != nil {
		t.Fatal(err)
	}
	decoded, err := jsonpatch.DecodePatch(p.Data)
	if err != nil {
		t.Fatalf("the planned patch is not a JSON patch: %v\n%s", err, p.Data)
	}
	patched, err := decoded.Apply(raw)
	if err != nil {
		t.Fatalf("applying the planned patch: %v", err)
	}
	var planned map[string]any
	if err := json.Unmarshal(patched, &planned); err != nil {
		t.Fatal(err)
	}

	res, err := w.Apply(t.Context(), ns, "shop", overrides)
	if err != nil || !res.Patched || res.Attempts != 1 {
		t.Fatalf("Apply: %+v, %v", res, err)
	}
	if diff := cmp.Diff(getSpec(t, dyn, ns, "shop"), planned["spec"]); diff != "" {
		t.Errorf("spec (-applied +planned):\n%s", diff)
	}

	// Once written, there is nothing left to plan.
	p, err = w.PlanFrom(t.Context(), ns, "shop", nil, overrides)
	if err != nil || p.Data != nil {
		t.Errorf("plan after the write: %s, %v; want no patch", p.Data, err)
	}
}
