package main

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/yaml"

	"github.com/crowsnest-dev/crowsnest/internal/testreg"
	"github.com/crowsnest-dev/crowsnest/watcher"
)

// pushTags pushes repo:tag for each tag, an hour apart, and returns the
// image's full name.
func pushTags(t *testing.T, reg *testreg.OCI, repo string, tags ...string) string {
	t.Helper()
	t0 := time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)
	for i, tag := range tags {
		reg.Push(t, repo+":"+tag, testreg.Image(t, t0.Add(time.Duration(i)*time.Hour), "linux/amd64"))
	}
	return reg.Host() + "/" + repo
}

// e2eCluster returns a kubeconfig for the test apiserver, a fresh
// namespace and the test's temporary folder.
func e2eCluster(t *testing.T, prefix string) (kubeconfig, ns, dir string) {
	t.Helper()
	dir = t.TempDir()
	kubeconfig = filepath.Join(dir, "kubeconfig")
	if err := env.WriteKubeconfig(kubeconfig); err != nil {
		t.Fatal(err)
	}
	return kubeconfig, env.CreateNamespace(t, prefix), dir
}

// createApp creates the Application in doc (YAML) in ns and, when images
// are given, reports them running in status.summary.images as Argo CD does.
func createApp(t *testing.T, ns, doc string, images ...string) {
	t.Helper()
	var obj map[string]any
	if err := yaml.Unmarshal([]byte(doc), &obj); err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{Object: obj}
	u.SetNamespace(ns)
	apps := appsIn(ns)
	created, err := apps.Create(t.Context(), u, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(images) == 0 {
		return
	}
	list := make([]any, len(images))
	for i, s := range images {
		list[i] = s
	}
	created.Object["status"] = map[string]any{"summary": map[string]any{"images": list}}
	if _, err := apps.Update(t.Context(), created, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func appsIn(ns string) dynamic.ResourceInterface {
	return dynamic.NewForConfigOrDie(env.Config).Resource(watcher.ApplicationsResource).Namespace(ns)
}

// kustomizeImages reads an Application's spec.source.kustomize.images.
func kustomizeImages(t *testing.T, ns, name string) []string {
	t.Helper()
	u, err := appsIn(ns).Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	images, _, _ := unstructured.NestedStringSlice(u.Object, "spec", "source", "kustomize", "images")
	return images
}

// annotatedApp is a kustomize Application YAML with the given annotations
// block (already indented by four spaces).
func annotatedApp(name, annotations string) string {
	return fmt.Sprintf(`
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata:
  name: %s
  annotations:
%s
spec:
  project: default
  destination: {server: https://kubernetes.default.svc, namespace: web}
  source: {repoURL: https://git.example.com/web.git, path: deploy}
`, name, annotations)
}

// withArgoNamespace makes the namespace a test's Applications live in
// (--namespace) Argo CD's as well, unless args say where Argo CD runs: in
// these tests it plays Argo CD's namespace, whose default project (and
// only whose AppProjects) crowsnest goes by.
func withArgoNamespace(args []string) []string {
	if slices.Contains(args, "--argocd-namespace") {
		return args
	}
	if i := slices.Index(args, "--namespace"); i >= 0 && i+1 < len(args) {
		first, _, _ := strings.Cut(args[i+1], ",")
		return append(slices.Clip(args), "--argocd-namespace", first)
	}
	return args
}
