package examples_test

import (
	"os"
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/crowsnest-dev/crowsnest/internal/testenv"
)

// Every example Application and AppProject is one Argo CD accepts: created
// on an apiserver serving Argo CD's own CRDs with strict field validation,
// so a wrongly typed field, a missing required one or an unknown (mistyped)
// key fails here rather than in a user's cluster.
func TestArgoCDObjectExamplesMatchArgoCDSchema(t *testing.T) {
	files := []string{
		"apps/guestbook.yaml",
		"apps/helm.yaml",
		"apps/kustomize-git.yaml",
		"apps/multisource-git.yaml",
		"apps/shop.yaml",
		"demo/apps/apps.yaml",
		"install/overlays/multi-team/appprojects.yaml",
	}
	env := testenv.New(t)
	dyn, err := dynamic.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := kubernetes.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	namespaces := map[string]bool{}
	var created int
	for _, file := range files {
		data, err := os.ReadFile(filepath.FromSlash(file))
		if err != nil {
			t.Fatal(err)
		}
		for i, obj := range splitYAML(t, data) {
			if obj.GetAPIVersion() != "argoproj.io/v1alpha1" {
				continue
			}
			gvr := testenv.ApplicationsGVR
			if obj.GetKind() == "AppProject" {
				gvr = testenv.AppProjectsGVR
			}
			ns := obj.GetNamespace()
			if ns == "" {
				ns = "default"
			}
			if !namespaces[ns] && ns != "default" {
				if _, err := cs.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			namespaces[ns] = true
			opts := metav1.CreateOptions{FieldValidation: metav1.FieldValidationStrict, DryRun: []string{metav1.DryRunAll}}
			if _, err := dyn.Resource(gvr).Namespace(ns).Create(t.Context(), obj, opts); err != nil {
				t.Errorf("%s document %d (%s %s): %v", file, i+1, obj.GetKind(), obj.GetName(), err)
			}
			created++
		}
	}
	if created == 0 {
		t.Fatal("no Argo CD object found in the examples")
	}
}
