package main

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"

	"github.com/crowsnest-dev/crowsnest/internal/testgit"
	"github.com/crowsnest-dev/crowsnest/internal/testreg"
	"github.com/crowsnest-dev/crowsnest/watcher"
)

// createProjectYAML creates the AppProject in doc (YAML) in ns.
func createProjectYAML(t *testing.T, ns, doc string) {
	t.Helper()
	var obj map[string]any
	if err := yaml.Unmarshal([]byte(doc), &obj); err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{Object: obj}
	u.SetNamespace(ns)
	if _, err := dynamic.NewForConfigOrDie(env.Config).Resource(watcher.AppProjectsResource).Namespace(ns).
		Create(t.Context(), u, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// appEvents lists the Events of the Application ns/name.
func appEvents(t *testing.T, ns, name string) []corev1.Event {
	t.Helper()
	list, err := kubernetes.NewForConfigOrDie(env.Config).CoreV1().Events(ns).List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return slices.DeleteFunc(list.Items, func(e corev1.Event) bool { return e.InvolvedObject.Name != name })
}

// A team that may create AppProjects in its own namespace makes look-alikes
// of the projects Argo CD goes by (those in Argo CD's namespace): a
// "default" with a deny window open all the time, and a "payments" whose
// window does not compile (which holds a whole project). Argo CD reads
// neither; crowsnest must not either: the Applications of the real
// projects are updated as if the look-alikes were not there.
func TestE2ELookAlikeAppProjectsHoldNobody(t *testing.T) {
	reg := testreg.StartOCI(t, testreg.OCIOptions{})
	image := pushTags(t, reg, "team/web", "1.0.0", "1.1.0")
	kubeconfig, argo, dir := e2eCluster(t, "e2e-lookalike")
	team := env.CreateNamespace(t, "team-b")
	cfgPath := filepath.Join(dir, "crowsnest.yaml")
	writeFile(t, cfgPath, "apiVersion: crowsnest.dev/v1alpha1\nkind: Config\n")

	createProjectYAML(t, argo, `
apiVersion: argoproj.io/v1alpha1
kind: AppProject
metadata: {name: payments}
spec: {sourceRepos: ["*"], destinations: [{server: "*", namespace: "*"}]}
`)
	createProjectYAML(t, team, `
apiVersion: argoproj.io/v1alpha1
kind: AppProject
metadata: {name: default}
spec:
  sourceRepos: ["*"]
  syncWindows:
    - {kind: deny, schedule: "* * * * *", duration: 1h, applications: ["*"]}
`)
	createProjectYAML(t, team, `
apiVersion: argoproj.io/v1alpha1
kind: AppProject
metadata: {name: payments}
spec:
  sourceRepos: ["*"]
  syncWindows:
    - {kind: deny, schedule: "0 0 * * *", duration: 1d, applications: ["*"]}
`)
	for _, app := range []struct{ name, project string }{{"web", "default"}, {"shop", "payments"}} {
		createApp(t, argo, fmt.Sprintf(`
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata:
  name: %s
  annotations:
    argocd-image-updater.argoproj.io/image-list: web=%s:~1
spec:
  project: %s
  destination: {server: https://kubernetes.default.svc, namespace: web}
  source: {repoURL: https://git.example.com/web.git, path: deploy}
`, app.name, image, app.project), image+":1.0.0")
	}

	startDaemon(t, "--kubeconfig", kubeconfig, "--config", cfgPath, "--namespace", argo, "--namespace", team,
		"--argocd-namespace", argo, "--metrics-bind-address", "0", "--health-probe-bind-address", "0", "--log-format", "json")
	for _, name := range []string{"web", "shop"} {
		waitFor(t, name+" to be patched to 1.1.0 despite the look-alike projects", func() bool {
			images := kustomizeImages(t, argo, name)
			return len(images) == 1 && images[0] == image+":1.1.0"
		})
		for _, e := range appEvents(t, argo, name) {
			if e.Reason == "ImageUpdateHeld" || strings.Contains(e.Message, team) {
				t.Errorf("%s: Event %s %q: a look-alike AppProject governed it", name, e.Reason, e.Message)
			}
		}
	}
}

// Fail closed: with no default AppProject in Argo CD's namespace (not yet
// recreated, or --argocd-namespace wrong), an Application in another
// namespace naming it gets no Git write-back (a WriteBackRefused Event
// naming the rule, the Git server untouched), and an image policy does not
// serve an Application whose AppProject does not exist.
func TestE2EUnknownProjectsFailClosed(t *testing.T) {
	reg := testreg.StartOCI(t, testreg.OCIOptions{})
	image := pushTags(t, reg, "team/web", "1.0.0", "1.1.0")
	gitSrv := testgit.Start(t, testgit.Options{})
	gitSrv.CreateRepo(t, "deploy")
	seed := gitSrv.Seed(t, "deploy", "main", map[string]string{"apps/web/kustomization.yaml": "resources: []\n"}, "initial")
	kubeconfig, argo, dir := e2eCluster(t, "e2e-failclosed")
	team := env.CreateNamespace(t, "team-b")
	cfgPath := filepath.Join(dir, "crowsnest.yaml")
	writeFile(t, cfgPath, fmt.Sprintf(`apiVersion: crowsnest.dev/v1alpha1
kind: Config
imagePolicies:
  - name: auto
    match: {labelSelector: crowsnest.dev/auto=true}
    images: [{image: %s, constraint: "~1"}]
`, image))

	createApp(t, team, fmt.Sprintf(`
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata:
  name: web
  annotations:
    argocd-image-updater.argoproj.io/image-list: web=%s:~1
    argocd-image-updater.argoproj.io/write-back-method: git
spec:
  project: default
  destination: {server: https://kubernetes.default.svc, namespace: web}
  source: {repoURL: %s, path: apps/web, targetRevision: main}
`, image, gitSrv.RepoURL("deploy")), image+":1.0.0")
	createApp(t, argo, `
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata:
  name: ghost
  labels: {crowsnest.dev/auto: "true"}
spec:
  project: ghost
  destination: {server: https://kubernetes.default.svc, namespace: web}
  source: {repoURL: https://git.example.com/web.git, path: deploy}
`, image+":1.0.0")

	d := startDaemon(t, "--kubeconfig", kubeconfig, "--config", cfgPath, "--namespace", argo, "--namespace", team,
		"--argocd-namespace", argo, "--git-cache-dir", filepath.Join(dir, "git"),
		"--metrics-bind-address", "0", "--health-probe-bind-address", "0", "--log-format", "json")
	waitFor(t, "a WriteBackRefused Event naming the missing default project", func() bool {
		for _, e := range appEvents(t, team, "web") {
			if e.Reason == "WriteBackRefused" && strings.Contains(e.Message, "AppProject default is not in Argo CD's namespace") {
				return true
			}
		}
		return false
	})
	d.waitLog(t, "image policy not applied", argo+"/ghost", "AppProject ghost is not known")
	waitFor(t, "an ImagePolicyRefused Event on ghost", func() bool {
		return slices.ContainsFunc(appEvents(t, argo, "ghost"), func(e corev1.Event) bool {
			return e.Reason == "ImagePolicyRefused" && strings.Contains(e.Message, "AppProject ghost is not known")
		})
	})
	if head := gitSrv.Head(t, "deploy", "main"); head != seed {
		t.Errorf("deploy main is at %s, want the seed %s: a refused write-back was pushed", head, seed)
	}
	if images := kustomizeImages(t, argo, "ghost"); len(images) != 0 {
		t.Errorf("ghost's images = %v: a policy served an Application of an unknown project", images)
	}
}
