package main

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/crowsnest-dev/crowsnest/internal/testgit"
	"github.com/crowsnest-dev/crowsnest/internal/testreg"
)

// Multi-source Applications in Git mode, golden: testdata/multisource-git
// holds the repository before (original) and after (expected), with
// {{REGISTRY}} standing for the test registry's host.
//
//   - "web" is a chart from a Helm repository whose values live in a Git
//     source with ref "values": write-back-target helmvalues:$values/...
//     edits that file in the values repository (comments and quoting kept).
//   - "shop" has a kustomize source and a Helm source in Git: each image's
//     override goes to .argocd-source-shop.yaml in its own source's path.
//
// Both Applications' changes land in one commit: same repository, same branch.
func TestE2EMultiSourceGitGolden(t *testing.T) {
	reg := testreg.StartOCI(t, testreg.OCIOptions{})
	web := pushTags(t, reg, "team/web", "1.0.0", "1.4.0")
	front := pushTags(t, reg, "team/front", "1.0.0", "1.4.0")
	api := pushTags(t, reg, "team/api", "2.0.0", "2.3.0", "3.0.0")

	golden := filepath.Join("testdata", "multisource-git")
	subst := func(s string) string { return strings.ReplaceAll(s, "{{REGISTRY}}", reg.Host()) }
	original, expected := readTree(t, filepath.Join(golden, "original"), subst), readTree(t, filepath.Join(golden, "expected"), subst)

	gitSrv := testgit.Start(t, testgit.Options{Username: "bot", Password: "s3cret-token"})
	gitSrv.CreateRepo(t, "config")
	before := gitSrv.Seed(t, "config", "main", original, "initial")
	repoURL := gitSrv.RepoURL("config")

	kubeconfig, ns, dir := e2eCluster(t, "e2e-multisource")
	cs := kubernetes.NewForConfigOrDie(env.Config)
	if _, err := cs.CoreV1().Secrets(ns).Create(t.Context(), &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "git-creds"},
		Data:       map[string][]byte{"username": []byte("bot"), "password": []byte("s3cret-token"), "url": []byte(gitSrv.URL)},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	createApp(t, ns, fmt.Sprintf(`
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata:
  name: web
  annotations:
    argocd-image-updater.argoproj.io/image-list: web=%[1]s:^1
    argocd-image-updater.argoproj.io/web.helm.image-name: image.repository
    argocd-image-updater.argoproj.io/web.helm.image-tag: image.tag
    argocd-image-updater.argoproj.io/write-back-method: git:secret:%[2]s/git-creds
    argocd-image-updater.argoproj.io/write-back-target: helmvalues:$values/envs/prod/values.yaml
spec:
  project: default
  destination: {server: https://kubernetes.default.svc, namespace: web}
  sources:
  - repoURL: https://charts.example.invalid
    chart: web
    targetRevision: 1.2.3
    helm: {valueFiles: [$values/envs/prod/values.yaml]}
  - {repoURL: %[3]s, targetRevision: main, ref: values}
`, web, ns, repoURL), web+":1.0.0")
	createApp(t, ns, fmt.Sprintf(`
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata:
  name: shop
  annotations:
    argocd-image-updater.argoproj.io/image-list: front=%[1]s:^1,api=%[2]s:^2
    argocd-image-updater.argoproj.io/api.helm.image-name: image.name
    argocd-image-updater.argoproj.io/api.helm.image-tag: image.tag
    argocd-image-updater.argoproj.io/write-back-method: git:secret:%[3]s/git-creds
spec:
  project: default
  destination: {server: https://kubernetes.default.svc, namespace: shop}
  sources:
  - {repoURL: %[4]s, path: apps/web, targetRevision: main, kustomize: {}}
  - {repoURL: %[4]s, path: charts/api, targetRevision: main, helm: {valueFiles: [values.yaml]}}
`, front, api, ns, repoURL), front+":1.0.0", api+":2.0.0")

	d := startDaemon(t, "--kubeconfig", kubeconfig, "--namespace", ns, "--metrics-bind-address", "0",
		"--health-probe-bind-address", "0", "--log-format", "json", "--git-cache-dir", filepath.Join(dir, "git"))
	waitFor(t, "a commit on main", func() bool { return gitSrv.Head(t, "config", "main") != before })
	d.waitLog(t, `"msg":"images updated"`, `"app":"`+ns+`/web"`, `"method":"git"`)
	d.waitLog(t, `"msg":"images updated"`, `"app":"`+ns+`/shop"`, `"method":"git"`)

	if log := gitSrv.Log(t, "config", "main"); len(log) != 2 {
		t.Fatalf("%d commits on main, want the seed plus one batch commit: %+v", len(log), log)
	}
	var paths []string
	for p := range expected {
		paths = append(paths, p)
	}
	slices.Sort(paths)
	for _, p := range paths {
		got, ok := gitSrv.ReadFile(t, "config", "main", p)
		switch {
		case !ok:
			t.Errorf("%s: missing on main", p)
		case got != expected[p]:
			t.Errorf("%s:\n%s\nwant:\n%s", p, got, expected[p])
		}
	}
	changed := gitSrv.ChangedFiles(t, "config", gitSrv.Head(t, "config", "main"))
	slices.Sort(changed)
	var want []string
	for _, p := range paths {
		if original[p] != expected[p] {
			want = append(want, p)
		}
	}
	if !slices.Equal(changed, want) {
		t.Errorf("the commit changed %v, want exactly %v", changed, want)
	}
}

// readTree reads every file under root, keyed by slash path, through subst.
func readTree(t *testing.T, root string, subst func(string) string) map[string]string {
	t.Helper()
	files := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		files[filepath.ToSlash(rel)] = subst(string(b))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}
