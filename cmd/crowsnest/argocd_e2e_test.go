package main

import (
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"

	"github.com/crowsnest-dev/crowsnest/internal/argocdenv"
	"github.com/crowsnest-dev/crowsnest/internal/testgit"
	"github.com/crowsnest-dev/crowsnest/internal/testreg"
	"github.com/crowsnest-dev/crowsnest/watcher"
	"github.com/crowsnest-dev/crowsnest/writeback/kube"
)

// argoCDWait bounds the waits on Argo CD: its first comparison of a new
// Application, a sync, a refresh.
const argoCDWait = 3 * time.Minute

// argoWorld is a real Argo CD (application controller and repo server)
// in a namespace of its own, a Git repository holding a kustomize
// Deployment of the test registry's team/web image at 1.0.0, and an
// automated Application "web" deploying it, synced once by Argo CD.
type argoWorld struct {
	argo       *argocdenv.ArgoCD
	git        *testgit.Server // nil when the repository is elsewhere
	reg        *testreg.OCI    // serves image
	repoURL    string
	image      string // registry/team/web
	app        string // the Application's name
	ns, dest   string
	kubeconfig string
	dir        string
}

// Each test names its Application differently: Argo CD tracks what it
// applied by Application name, and an earlier test's Deployment stays in
// the apiserver.
func newArgoWorld(t *testing.T, app string, annotations func(w *argoWorld) string, opts argocdenv.Options) *argoWorld {
	t.Helper()
	w := newArgoWorldWith(t, app, annotations, opts, "{automated: {}}")
	w.waitDeployed(t, w.image+":1.0.0")
	return w
}

// newArgoWorldWith is newArgoWorld with the Application's syncPolicy, and
// without waiting for a first sync.
func newArgoWorldWith(t *testing.T, app string, annotations func(w *argoWorld) string, opts argocdenv.Options, syncPolicy string) *argoWorld {
	t.Helper()
	w := newArgoWorldFiles(t, app, kustomizeWebFiles, opts)
	w.createWebApp(t, annotations(w), syncPolicy)
	return w
}

// createWebApp creates the world's Application: w.app deploying web/ of
// main of w.repoURL to w.dest, in the default project, with the
// annotations block (indented by four spaces) and syncPolicy.
func (w *argoWorld) createWebApp(t *testing.T, annotations, syncPolicy string) {
	t.Helper()
	createApp(t, w.ns, fmt.Sprintf(`
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata:
  name: %s
  annotations:
%s
spec:
  project: default
  source: {repoURL: %s, path: web, targetRevision: main}
  destination: {server: https://kubernetes.default.svc, namespace: %s}
  syncPolicy: %s
`, w.app, annotations, w.repoURL, w.dest, syncPolicy))
}

// newArgoWorldFiles starts the world without its Application: the
// registry with team/web 1.0.0 and 1.1.0, the Git repository "deploy"
// seeded on main with files(w) (w.image is set when files is called), Argo
// CD and its default AppProject. The test creates the Application (named
// app, deploying a Deployment "web" to w.dest) itself.
func newArgoWorldFiles(t *testing.T, app string, files func(w *argoWorld) map[string]string, opts argocdenv.Options) *argoWorld {
	t.Helper()
	w := newArgoWorldImage(t, app)
	w.git = testgit.Start(t, testgit.Options{Username: "bot", Password: "s3cret-token"})
	w.git.CreateRepo(t, "deploy")
	w.git.Seed(t, "deploy", "main", files(w), "initial")
	w.repoURL = w.git.RepoURL("deploy")
	w.startArgo(t, argocdenv.Repository{URL: w.repoURL, Username: "bot", Password: "s3cret-token"}, opts)
	return w
}

// newArgoWorldImage starts the world's registry with team/web 1.0.0 and
// 1.1.0.
func newArgoWorldImage(t *testing.T, app string) *argoWorld {
	t.Helper()
	reg := testreg.StartOCI(t, testreg.OCIOptions{})
	return &argoWorld{app: app, reg: reg, image: pushTags(t, reg, "team/web", "1.0.0", "1.1.0")}
}

// startArgo gives the world its namespaces and starts Argo CD there,
// reading repo with its credentials, with its default AppProject.
func (w *argoWorld) startArgo(t *testing.T, repo argocdenv.Repository, opts argocdenv.Options) {
	t.Helper()
	w.kubeconfig, w.ns, w.dir = e2eCluster(t, "e2e-argocd")
	w.dest = env.CreateNamespace(t, "e2e-argocd-dest")
	opts.Namespace = w.ns
	opts.Repositories = append(opts.Repositories, repo)
	w.argo = argocdenv.New(t, env, opts)
	createObjectIn(t, w.ns, `
apiVersion: argoproj.io/v1alpha1
kind: AppProject
metadata: {name: default}
spec:
  sourceRepos: ['*']
  destinations: [{server: '*', namespace: '*'}]
  clusterResourceWhitelist: [{group: '*', kind: '*'}]
`)
}

// kustomizeWebFiles is a kustomize directory web/ with the Deployment
// "web" running w.image at 1.0.0.
func kustomizeWebFiles(w *argoWorld) map[string]string {
	return map[string]string{
		"web/kustomization.yaml": "resources: [deployment.yaml]\n",
		"web/deployment.yaml": fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: web, image: "%s:1.0.0"}]
`, w.image),
	}
}

// waitDeployed waits until Argo CD has applied image to the Deployment
// and reports the Application Synced with image in status.summary.images.
func (w *argoWorld) waitDeployed(t *testing.T, image string) *unstructured.Unstructured {
	t.Helper()
	cs := kubernetes.NewForConfigOrDie(env.Config)
	var app *unstructured.Unstructured
	deadline := time.Now().Add(argoCDWait)
	for {
		dep, err := cs.AppsV1().Deployments(w.dest).Get(t.Context(), "web", metav1.GetOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Fatal(err)
		}
		deployed := err == nil && dep.Spec.Template.Spec.Containers[0].Image == image
		if app, err = appsIn(w.ns).Get(t.Context(), w.app, metav1.GetOptions{}); err != nil {
			t.Fatal(err)
		}
		sync, _, _ := unstructured.NestedString(app.Object, "status", "sync", "status")
		images, _, _ := unstructured.NestedStringSlice(app.Object, "status", "summary", "images")
		if deployed && sync == "Synced" && slices.Contains(images, image) {
			return app
		}
		if time.Now().After(deadline) {
			t.Fatalf("Argo CD did not deploy %s within %s (Deployment found: %v, sync %q, images %v); Argo CD's logs:\n%s",
				image, argoCDWait, dep != nil && err == nil, sync, images, w.argo.Logs())
		}
		time.Sleep(200 * time.Millisecond) // sleep-ok: poll interval
	}
}

// daemon runs crowsnest on the world's namespace, Argo CD's own.
func (w *argoWorld) daemon(t *testing.T, args ...string) *daemon {
	t.Helper()
	return startDaemon(t, append([]string{"--kubeconfig", w.kubeconfig, "--namespace", w.ns, "--argocd-namespace", w.ns,
		"--metrics-bind-address", "0", "--health-probe-bind-address", "0", "--log-format", "json",
		"--git-cache-dir", filepath.Join(w.dir, "git")}, args...)...)
}

// Kubernetes mode with the real Argo CD: crowsnest reads the running
// image from the status Argo CD wrote, patches the Application's
// kustomize images, and Argo CD's automated sync puts the new image on
// the Deployment.
func TestE2EArgoCDKubernetesModeDeploysTheNewImage(t *testing.T) {
	w := newArgoWorld(t, "web-kube", func(w *argoWorld) string {
		return "    argocd-image-updater.argoproj.io/image-list: web=" + w.image + ":^1"
	}, argocdenv.Options{})
	d := w.daemon(t)
	app := w.waitDeployed(t, w.image+":1.1.0")
	d.waitLog(t, `"msg":"images updated"`, `"method":"argocd"`)
	if images, _, _ := unstructured.NestedStringSlice(app.Object, "spec", "source", "kustomize", "images"); !slices.Equal(images, []string{w.image + ":1.1.0"}) {
		t.Errorf("spec.source.kustomize.images = %v, want crowsnest's override to 1.1.0", images)
	}
	if phase, _, _ := unstructured.NestedString(app.Object, "status", "operationState", "phase"); phase != "Succeeded" {
		t.Errorf("Argo CD's last operation ended %q, want Succeeded", phase)
	}
}

// Git mode with the real Argo CD: crowsnest commits
// .argocd-source-<app>.yaml, asks Argo CD to refresh, and Argo CD syncs the
// commit. Argo CD's own resync is set to its default three minutes, as
// long as the wait, so a deployment within the wait is the refresh's
// doing; the revision Argo CD synced is crowsnest's commit.
func TestE2EArgoCDGitModeDeploysTheCommit(t *testing.T) {
	w := newArgoWorld(t, "web-git", func(w *argoWorld) string {
		return "    argocd-image-updater.argoproj.io/image-list: web=" + w.image + ":^1\n" +
			"    argocd-image-updater.argoproj.io/write-back-method: git:secret:" + w.ns + "/git-creds"
	}, argocdenv.Options{AppResync: argoCDWait})
	createSecret(t, w.ns, "git-creds", map[string]string{"username": "bot", "password": "s3cret-token", "url": w.git.URL})
	before := w.git.Head(t, "deploy", "main")
	d := w.daemon(t)
	app := w.waitDeployed(t, w.image+":1.1.0")
	d.waitLog(t, `"msg":"images updated"`, `"method":"git"`)
	head := w.git.Head(t, "deploy", "main")
	if head == before {
		t.Fatal("no commit on main")
	}
	if rev, _, _ := unstructured.NestedString(app.Object, "status", "sync", "revision"); rev != head {
		t.Errorf("Argo CD synced revision %s, want crowsnest's commit %s", rev, head)
	}
	if got, ok := w.git.ReadFile(t, "deploy", "main", "web/.argocd-source-web-git.yaml"); !ok {
		t.Error("web/.argocd-source-<app>.yaml missing on main")
	} else {
		t.Logf(".argocd-source-<app>.yaml:\n%s", got)
	}
	if _, ok := app.GetAnnotations()[kube.RefreshAnnotation]; ok {
		t.Errorf("the refresh annotation is still there: Argo CD removes it when it has refreshed")
	}
}

// An allow window with syncOnOpen, with the real Argo CD: when the window
// opens, crowsnest sets the Application's operation and Argo CD runs that
// sync to Succeeded (the Application has no automated sync policy, so
// nothing else syncs it). The window opens every second minute.
func TestE2EArgoCDWindowOpeningStartsARealSync(t *testing.T) {
	w := newArgoWorldWith(t, "web-window", func(*argoWorld) string {
		return "    crowsnest.dev/test: window"
	}, argocdenv.Options{}, "{}")
	waitFor(t, "Argo CD to find the Application OutOfSync", func() bool {
		app, err := appsIn(w.ns).Get(t.Context(), w.app, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		sync, _, _ := unstructured.NestedString(app.Object, "status", "sync", "status")
		return sync == "OutOfSync"
	})
	cfg := filepath.Join(w.dir, "crowsnest.yaml")
	writeFile(t, cfg, `apiVersion: crowsnest.dev/v1alpha1
kind: Config
syncWindows:
  - kind: allow
    schedule: "*/2 * * * *"
    duration: 1m
    applications: [web-window]
    syncOnOpen: true
`)
	w.daemon(t, "--config", cfg)
	app := w.waitDeployed(t, w.image+":1.0.0")
	if phase, _, _ := unstructured.NestedString(app.Object, "status", "operationState", "phase"); phase != "Succeeded" {
		t.Errorf("the sync ended %q, want Succeeded", phase)
	}
	by, _, _ := unstructured.NestedString(app.Object, "status", "operationState", "operation", "initiatedBy", "username")
	if by != "crowsnest" {
		t.Errorf("the sync was initiated by %q, want crowsnest", by)
	}
}

// createObjectIn creates the object in doc (YAML) in ns through the
// dynamic client, by its apiVersion and kind.
func createObjectIn(t *testing.T, ns, doc string) {
	t.Helper()
	var obj map[string]any
	if err := yaml.Unmarshal([]byte(doc), &obj); err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{Object: obj}
	gvr := watcher.AppProjectsResource
	if u.GetKind() == "Application" {
		gvr = watcher.ApplicationsResource
	}
	if _, err := dynamic.NewForConfigOrDie(env.Config).Resource(gvr).Namespace(ns).Create(t.Context(), u, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating %s %s: %v", u.GetKind(), u.GetName(), err)
	}
}

func createSecret(t *testing.T, ns, name string, data map[string]string) {
	t.Helper()
	cs := kubernetes.NewForConfigOrDie(env.Config)
	if _, err := cs.CoreV1().Secrets(ns).Create(t.Context(), &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: name}, StringData: data,
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}
