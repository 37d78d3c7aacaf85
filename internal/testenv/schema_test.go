package testenv

import (
	"os"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"
)

var env *Env

func TestMain(m *testing.M) { os.Exit(RunMain(m, &env)) }

// validApp is an Application as a user writes it and Argo CD accepts it.
const validApp = `
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata:
  name: web
spec:
  project: default
  destination:
    server: https://kubernetes.default.svc
    namespace: web
  source:
    repoURL: https://git.example/deploy.git
    path: web
    targetRevision: main
    kustomize:
      images: [registry.example/web:1.0.0]
  syncPolicy:
    automated:
      prune: true
      selfHeal: true
`

// The control plane serves Argo CD's own Application schema: what Argo CD
// accepts is accepted, and what its schema forbids is refused by the
// apiserver, so crowsnest's writes in tests meet the same checks as in a
// cluster.
func TestApplicationSchemaIsArgoCDs(t *testing.T) {
	dyn, err := dynamic.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	ns := env.CreateNamespace(t, "schema")
	tests := []struct {
		name    string
		mutate  func(obj map[string]any)
		wantErr bool
	}{
		{name: "valid application", mutate: func(map[string]any) {}},
		{
			name: "automated.prune is a string",
			mutate: func(obj map[string]any) {
				setField(t, obj, "yes", "spec", "syncPolicy", "automated", "prune")
			},
			wantErr: true,
		},
		{
			name: "syncOptions is a string, not a list",
			mutate: func(obj map[string]any) {
				setField(t, obj, "CreateNamespace=true", "spec", "syncPolicy", "syncOptions")
			},
			wantErr: true,
		},
		{
			name:    "no destination",
			mutate:  func(obj map[string]any) { unstructured.RemoveNestedField(obj, "spec", "destination") },
			wantErr: true,
		},
		{
			name:    "no project",
			mutate:  func(obj map[string]any) { unstructured.RemoveNestedField(obj, "spec", "project") },
			wantErr: true,
		},
		{
			name: "operation.sync.revision is a number",
			mutate: func(obj map[string]any) {
				setField(t, obj, int64(42), "operation", "sync", "revision")
			},
			wantErr: true,
		},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			obj := &unstructured.Unstructured{}
			if err := yaml.Unmarshal([]byte(validApp), &obj.Object); err != nil {
				t.Fatal(err)
			}
			obj.SetName("web-" + string(rune('a'+i)))
			tt.mutate(obj.Object)
			_, err := dyn.Resource(ApplicationsGVR).Namespace(ns).Create(t.Context(), obj, metav1.CreateOptions{})
			if tt.wantErr {
				if !apierrors.IsInvalid(err) {
					t.Fatalf("create: got %v, want an Invalid error from the schema", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("create: %v", err)
			}
		})
	}
}

// A field Argo CD's schema does not have is dropped by the apiserver with
// only a warning (the default field validation); the Env's clients record
// it, so New and RunMain fail the tests that make such a write.
func TestPrunedFieldsAreRecorded(t *testing.T) {
	cfg := rest.CopyConfig(env.Config)
	warnings := &warningLog{}
	cfg.WarningHandler = warnings
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ns := env.CreateNamespace(t, "pruned")
	obj := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(validApp), &obj.Object); err != nil {
		t.Fatal(err)
	}
	apps := dyn.Resource(ApplicationsGVR).Namespace(ns)
	if _, err := apps.Create(t.Context(), obj, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if len(warnings.pruned) != 0 {
		t.Fatalf("a valid Application was reported pruned: %q", warnings.pruned)
	}
	patch := []byte(`{"spec":{"source":{"kustomize":{"imagez":["registry.example/web:1.1.0"]}}}}`)
	got, err := apps.Patch(t.Context(), "web", types.MergePatchType, patch, metav1.PatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, found, _ := unstructured.NestedFieldNoCopy(got.Object, "spec", "source", "kustomize", "imagez"); found {
		t.Fatal("the apiserver kept spec.source.kustomize.imagez; the schema is not pruning")
	}
	if len(warnings.pruned) != 1 || !strings.Contains(warnings.pruned[0], "spec.source.kustomize.imagez") {
		t.Errorf("pruned-field warnings = %q, want one naming spec.source.kustomize.imagez", warnings.pruned)
	}
}

func setField(t *testing.T, obj map[string]any, value any, fields ...string) {
	t.Helper()
	if err := unstructured.SetNestedField(obj, value, fields...); err != nil {
		t.Fatal(err)
	}
}
