package argocdenv_test

import (
	"fmt"
	"os"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"

	"github.com/crowsnest-dev/crowsnest/internal/argocdenv"
	"github.com/crowsnest-dev/crowsnest/internal/testenv"
	"github.com/crowsnest-dev/crowsnest/internal/testgit"
	"github.com/crowsnest-dev/crowsnest/internal/testwait"
)

var env *testenv.Env

func TestMain(m *testing.M) { os.Exit(testenv.RunMain(m, &env)) }

// The environment is a working Argo CD: an automated Application whose
// kustomization is in a local Git repository is rendered by the repo
// server and synced by the application controller, and the Deployment it
// applies is reported Healthy (the health customization) with its image
// in status.summary.images.
func TestArgoCDSyncsAKustomizeApplication(t *testing.T) {
	git := testgit.Start(t, testgit.Options{Username: "argocd", Password: "s3cret"})
	git.CreateRepo(t, "deploy")
	git.Seed(t, "deploy", "main", map[string]string{
		"web/kustomization.yaml": "resources: [deployment.yaml]\nimages:\n- name: web\n  newName: registry.example/web\n  newTag: 1.0.0\n",
		"web/deployment.yaml":    deployment("web", "web"),
	}, "initial")
	argo := argocdenv.New(t, env, argocdenv.Options{
		Repositories: []argocdenv.Repository{{URL: git.RepoURL("deploy"), Username: "argocd", Password: "s3cret"}},
	})
	dest := env.CreateNamespace(t, "web")
	dyn := dynamic.NewForConfigOrDie(env.Config)
	createObject(t, dyn, testenv.AppProjectsGVR, argo.Namespace, `
apiVersion: argoproj.io/v1alpha1
kind: AppProject
metadata: {name: default}
spec:
  sourceRepos: ['*']
  destinations: [{server: '*', namespace: '*'}]
  clusterResourceWhitelist: [{group: '*', kind: '*'}]
`)
	createObject(t, dyn, testenv.ApplicationsGVR, argo.Namespace, fmt.Sprintf(`
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: web}
spec:
  project: default
  source: {repoURL: %s, path: web, targetRevision: main}
  destination: {server: https://kubernetes.default.svc, namespace: %s}
  syncPolicy: {automated: {}}
`, git.RepoURL("deploy"), dest))

	cs := kubernetes.NewForConfigOrDie(env.Config)
	var dep *appsv1.Deployment
	waitFor(t, argo, "Argo CD to apply the Deployment", func() bool {
		var err error
		dep, err = cs.AppsV1().Deployments(dest).Get(t.Context(), "web", metav1.GetOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Fatal(err)
		}
		return err == nil
	})
	if got := dep.Spec.Template.Spec.Containers[0].Image; got != "registry.example/web:1.0.0" {
		t.Errorf("the Deployment's image is %q, want kustomize's registry.example/web:1.0.0", got)
	}
	var status any
	waitFor(t, argo, "the Application to be Synced and Healthy with the image in its summary", func() bool {
		app, err := dyn.Resource(testenv.ApplicationsGVR).Namespace(argo.Namespace).Get(t.Context(), "web", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		sync, _, _ := unstructured.NestedString(app.Object, "status", "sync", "status")
		health, _, _ := unstructured.NestedString(app.Object, "status", "health", "status")
		images, _, _ := unstructured.NestedStringSlice(app.Object, "status", "summary", "images")
		status = app.Object["status"]
		return sync == "Synced" && health == "Healthy" && len(images) == 1 && images[0] == "registry.example/web:1.0.0"
	}, func() any { return status })
}

func deployment(name, container string) string {
	return fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata: {name: %[1]s}
spec:
  selector: {matchLabels: {app: %[1]s}}
  template:
    metadata: {labels: {app: %[1]s}}
    spec:
      containers: [{name: %[2]s, image: %[2]s}]
`, name, container)
}

func createObject(t *testing.T, dyn dynamic.Interface, gvr schema.GroupVersionResource, ns, doc string) {
	t.Helper()
	var obj unstructured.Unstructured
	if err := yaml.Unmarshal([]byte(doc), &obj.Object); err != nil {
		t.Fatal(err)
	}
	if _, err := dyn.Resource(gvr).Namespace(ns).Create(t.Context(), &obj, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating %s %s: %v", obj.GetKind(), obj.GetName(), err)
	}
}

// waitFor is testwait.For at Argo CD's pace: rendering and syncing take
// tens of seconds, so it waits longer and polls the apiserver less often,
// and a timeout shows the last value seen (seen[0], when given) and Argo
// CD's logs.
func waitFor(t *testing.T, argo *argocdenv.ArgoCD, what string, cond func() bool, seen ...func() any) {
	t.Helper()
	detail := func() string {
		var last any
		if len(seen) > 0 {
			last = seen[0]()
		}
		return fmt.Sprintf("last seen: %v; Argo CD's logs:\n%s", last, argo.Logs())
	}
	testwait.Wait{Timeout: 2 * time.Minute, MaxInterval: 100 * time.Millisecond, Detail: detail}.For(t, what, cond)
}
