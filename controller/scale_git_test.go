package controller_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/crowsnest-dev/crowsnest/controller"
	"github.com/crowsnest-dev/crowsnest/internal/kubecore/kubecoretest"
	"github.com/crowsnest-dev/crowsnest/internal/testgit"
	"github.com/crowsnest-dev/crowsnest/internal/testreg"
	"github.com/crowsnest-dev/crowsnest/registry"
	"github.com/crowsnest-dev/crowsnest/watcher"
	gitwb "github.com/crowsnest-dev/crowsnest/writeback/git"
	"github.com/crowsnest-dev/crowsnest/writeback/git/collect"
	"github.com/crowsnest-dev/crowsnest/writeback/git/repocreds"
)

// Sizes of the monorepo scale test.
const (
	gitScaleApps  = 200
	gitScaleRepos = 10
)

// typeLabel marks Argo CD's repository credential Secrets (the tests that
// create one: notifyrepo_test.go).
const typeLabel = "argocd.argoproj.io/secret-type"

// 200 Applications whose sources live in one monorepo, all in Git mode
// with a newer tag available, become ONE commit that edits all 200
// kustomization files, after one tag list per image repository.
//
// The batcher starts once every Application has been reconciled (each
// reconcile hands its change to the batcher before it returns), so the
// first batch holds all 200 changes whatever the machine's speed: the
// test proves that one batch is one commit, not how many reconciles fit
// in one push.
func TestScaleGitMonorepoOneCommit(t *testing.T) {
	reg := testreg.StartOCI(t, testreg.OCIOptions{})
	newTags := pushScaleTags(t, reg, gitScaleRepos)

	const user, password = "bot", "s3cret-token"
	gitSrv := testgit.Start(t, testgit.Options{Username: user, Password: password})
	repoURL := gitSrv.CreateRepo(t, "monorepo")
	appPath := func(i int) string { return fmt.Sprintf("apps/app-%03d", i) }
	image := func(i int) string { return reg.Host() + "/" + scaleRepo(i%gitScaleRepos) }
	kustomization := func(i int, tag string) string {
		return fmt.Sprintf("# app-%03d, managed by crowsnest\nresources:\n- deployment.yaml\nimages:\n- name: %s\n  newTag: %s # bumped automatically\n", i, image(i), tag)
	}
	files := map[string]string{}
	for i := range gitScaleApps {
		files[appPath(i)+"/kustomization.yaml"] = kustomization(i, "1.0.0")
	}
	seed := gitSrv.Seed(t, "monorepo", "main", files, "initial")

	ns := env.CreateNamespace(t, "scale-git")
	cs := kubernetes.NewForConfigOrDie(env.Config)
	if _, err := cs.CoreV1().Secrets(ns).Create(t.Context(), &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "git-creds"},
		Data:       map[string][]byte{"username": []byte(user), "password": []byte(password), "url": []byte(repoURL)},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	createAppsRunning(t, setupApps(t, ns), gitScaleApps, func(i int) string {
		return fmt.Sprintf(`
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata:
  name: app-%03[1]d
  namespace: %[2]s
  annotations:
    argocd-image-updater.argoproj.io/image-list: %[3]s:^1
    argocd-image-updater.argoproj.io/write-back-method: git:secret:%[2]s/git-creds
    argocd-image-updater.argoproj.io/write-back-target: kustomization
spec:
  project: default
  destination: {server: https://kubernetes.default.svc, namespace: app-%03[1]d}
  source: {repoURL: %[4]s, path: %[5]s, targetRevision: main}
`, i, ns, image(i), repoURL, appPath(i))
	}, func(i int) string { return image(i) + ":1.0.0" })

	// Wired as `crowsnest run` wires it in cluster mode.
	events := &eventLog{}
	metrics := prometheus.NewRegistry()
	engine := &controller.Engine{Metrics: controller.NewMetrics(metrics), Log: discardLog()}
	engine.Sources = []controller.Source{&watcher.KubeSource{Client: dynClient(t), Namespaces: []string{ns}, Log: discardLog()}}
	creds := &repocreds.ArgoCD{Client: kubecoretest.Wrap(cs), Namespace: ns}
	images := &controller.ImageReconciler{
		Registry: &registry.Client{Log: discardLog()},
		Queue:    noFirstPass{engine},
		Events:   events,
		Metrics:  controller.NewImageMetrics(metrics),
		Log:      discardLog(),
	}
	writer := &gitwb.Writer{
		CacheDir:    t.TempDir(),
		Credentials: creds,
		AuthorName:  "crowsnest",
		AuthorEmail: "crowsnest@noreply.crowsnest.dev",
		Metrics:     gitwb.NewMetrics(metrics),
		Log:         discardLog(),
	}
	images.Git = &collect.Batcher{Writer: writer, Engine: engine}
	counting := &countingReconciler{next: images}
	engine.Reconciler = counting
	runEngine(t, engine)

	waitScale(t, "every Application to be reconciled", func() bool { return counting.keys() == gitScaleApps },
		func() string {
			return fmt.Sprintf("%d of %d reconciled, errors %v", counting.keys(), gitScaleApps, counting.errors())
		})
	if errs := counting.errors(); len(errs) > 0 {
		t.Fatalf("reconciles failed: %v", errs)
	}
	if got := gitSrv.Head(t, "monorepo", "main"); got != seed {
		t.Fatalf("main moved to %s before the batcher ran", got)
	}
	runTask(t, "the Git batcher", images.RunGit)

	waitScale(t, "an ImagesUpdated Event for every Application", func() bool {
		return events.count(controller.EventImagesUpdated) >= gitScaleApps
	}, func() string {
		return fmt.Sprintf("%d ImagesUpdated, %d ImageUpdateFailed", events.count(controller.EventImagesUpdated), events.count(controller.EventImageUpdateFailed))
	})

	log := gitSrv.Log(t, "monorepo", "main")
	if len(log) != 2 || log[1].SHA != seed {
		t.Fatalf("main has %d commits, want the seed plus one batch commit: %+v", len(log), log)
	}
	if want := "crowsnest <crowsnest@noreply.crowsnest.dev>"; log[0].Author != want {
		t.Errorf("batch commit by %q, want %q", log[0].Author, want)
	}
	changed := gitSrv.ChangedFiles(t, "monorepo", log[0].SHA)
	slices.Sort(changed)
	want := make([]string, 0, gitScaleApps)
	for i := range gitScaleApps {
		want = append(want, appPath(i)+"/kustomization.yaml")
	}
	if diff := cmp.Diff(want, changed); diff != "" {
		t.Errorf("files changed by the batch commit (-want +got):\n%s", diff)
	}
	for i := range gitScaleApps {
		path := appPath(i) + "/kustomization.yaml"
		got, _ := gitSrv.ReadFile(t, "monorepo", "main", path)
		if diff := cmp.Diff(kustomization(i, newTags[i%gitScaleRepos]), got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", path, diff)
		}
	}
	for i := range gitScaleApps {
		key := fmt.Sprintf("%s/app-%03d", ns, i)
		if diff := cmp.Diff([]string{controller.EventImagesUpdated}, events.reasons(key)); diff != "" {
			t.Errorf("Events of %s (-want +got):\n%s", key, diff)
		}
	}
	for i := range gitScaleRepos {
		if n := reg.Count("list", "/v2/"+scaleRepo(i)+"/tags/list"); n != 1 {
			t.Errorf("%s: %d tag lists, want 1 for the whole pass", scaleRepo(i), n)
		}
	}
	if got := counter(t, metrics, "crowsnest_image_updates_total", map[string]string{"method": "git", "result": "success"}); got != gitScaleApps {
		t.Errorf("crowsnest_image_updates_total{method=git,result=success} = %v, want %d", got, gitScaleApps)
	}
	for _, l := range log {
		if strings.Contains(l.Subject+l.Body, password) {
			t.Errorf("the Git password appears in a commit message: %q", l.Subject)
		}
	}
}

// runTask runs start until the test ends and checks that it returned nil.
func runTask(t *testing.T, what string, start func(context.Context) error) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("%s returned %v", what, err)
		}
	})
}
