package main

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

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

// Two Applications whose sources live in one repository, both in Git mode:
// newer tags become ONE commit on the real Git server (git http-backend,
// authenticated with a Secret named by the annotation), with exactly the
// expected edits, and the Applications themselves are not patched.
func TestE2EImageUpdateGitMode(t *testing.T) {
	reg := testreg.StartOCI(t, testreg.OCIOptions{})
	t0 := time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)
	for i, tag := range []string{"1.0.0", "1.4.0"} {
		reg.Push(t, "team/web:"+tag, testreg.Image(t, t0.Add(time.Duration(i)*time.Hour), "linux/amd64"))
		reg.Push(t, "team/api:"+tag, testreg.Image(t, t0.Add(time.Duration(i)*time.Hour), "linux/amd64"))
	}
	web, api := reg.Host()+"/team/web", reg.Host()+"/team/api"

	gitSrv := testgit.Start(t, testgit.Options{Username: "bot", Password: "s3cret-token"})
	gitSrv.CreateRepo(t, "deploy")
	kustomization := fmt.Sprintf("# web, managed by crowsnest\nresources:\n- deployment.yaml\nimages:\n- name: %s\n  newTag: 1.0.0 # bumped automatically\n", web)
	before := gitSrv.Seed(t, "deploy", "main", map[string]string{
		"apps/web/kustomization.yaml": kustomization,
		"apps/web/deployment.yaml":    "kind: Deployment\n",
		"apps/api/kustomization.yaml": "resources: [deployment.yaml]\n",
		"apps/api/deployment.yaml":    "kind: Deployment\n",
	}, "initial")
	repoURL := gitSrv.RepoURL("deploy")

	dir := t.TempDir()
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := env.WriteKubeconfig(kubeconfig); err != nil {
		t.Fatal(err)
	}
	ns := env.CreateNamespace(t, "e2e-git")
	cs := kubernetes.NewForConfigOrDie(env.Config)
	if _, err := cs.CoreV1().Secrets(ns).Create(t.Context(), &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "git-creds"},
		Data:       map[string][]byte{"username": []byte("bot"), "password": []byte("s3cret-token"), "url": []byte(gitSrv.URL)},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	dyn := dynamic.NewForConfigOrDie(env.Config)
	apps := dyn.Resource(watcher.ApplicationsResource).Namespace(ns)
	for _, a := range []struct{ name, image, target string }{
		{"web", web, "kustomization"},
		{"api", api, ""},
	} {
		target := ""
		if a.target != "" {
			target = "\n    argocd-image-updater.argoproj.io/write-back-target: " + a.target
		}
		doc := fmt.Sprintf(`
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata:
  name: %[1]s
  annotations:
    argocd-image-updater.argoproj.io/image-list: %[2]s:^1
    argocd-image-updater.argoproj.io/write-back-method: git:secret:%[3]s/git-creds%[4]s
spec:
  project: default
  destination: {server: https://kubernetes.default.svc, namespace: %[1]s}
  source: {repoURL: %[5]s, path: apps/%[1]s, targetRevision: main}
`, a.name, a.image, ns, target, repoURL)
		var obj map[string]any
		if err := yaml.Unmarshal([]byte(doc), &obj); err != nil {
			t.Fatal(err)
		}
		u := &unstructured.Unstructured{Object: obj}
		u.SetNamespace(ns)
		created, err := apps.Create(t.Context(), u, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		created.Object["status"] = map[string]any{"summary": map[string]any{"images": []any{a.image + ":1.0.0"}}}
		if _, err := apps.Update(t.Context(), created, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	d := startDaemon(t, "--kubeconfig", kubeconfig, "--namespace", ns, "--metrics-bind-address", "0",
		"--health-probe-bind-address", "0", "--log-format", "json", "--git-cache-dir", filepath.Join(dir, "git"))

	waitFor(t, "a commit on main", func() bool { return gitSrv.Head(t, "deploy", "main") != before })
	d.waitLog(t, `"msg":"images updated"`, `"app":"`+ns+`/api"`, `"method":"git"`)
	d.waitLog(t, `"msg":"images updated"`, `"app":"`+ns+`/web"`, `"method":"git"`)

	log := gitSrv.Log(t, "deploy", "main")
	if len(log) != 2 {
		t.Fatalf("%d commits on main, want the seed plus one batch commit: %+v", len(log), log)
	}
	files := gitSrv.ChangedFiles(t, "deploy", log[0].SHA)
	slices.Sort(files)
	if want := []string{"apps/api/.argocd-source-api.yaml", "apps/web/kustomization.yaml"}; !slices.Equal(files, want) {
		t.Errorf("commit changed %v, want %v", files, want)
	}
	got, _ := gitSrv.ReadFile(t, "deploy", "main", "apps/web/kustomization.yaml")
	if want := strings.Replace(kustomization, "newTag: 1.0.0", "newTag: 1.4.0", 1); got != want {
		t.Errorf("kustomization.yaml:\n%s\nwant (only the tag changed, comments kept):\n%s", got, want)
	}
	src, _ := gitSrv.ReadFile(t, "deploy", "main", "apps/api/.argocd-source-api.yaml")
	if !strings.Contains(src, api+":1.4.0") {
		t.Errorf(".argocd-source-api.yaml lacks the new image:\n%s", src)
	}
	if !strings.Contains(log[0].Subject+log[0].Body, "1.4.0") {
		t.Errorf("commit message does not name the change: %q %q", log[0].Subject, log[0].Body)
	}
	// Git mode writes Git only: the Applications are untouched.
	u, err := apps.Get(t.Context(), "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, found, _ := unstructured.NestedFieldNoCopy(u.Object, "spec", "source", "kustomize"); found {
		t.Error("Git mode patched the Application")
	}
	for _, l := range d.lines() {
		if strings.Contains(l, "s3cret-token") {
			t.Fatalf("the Git token appears in the log: %s", l)
		}
	}
}
