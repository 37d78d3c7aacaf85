package main

import (
	"context"
	"log/slog"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"

	"github.com/crowsnest-dev/crowsnest/controller/gitplan"
	"github.com/crowsnest-dev/crowsnest/controller/imageupdate"
	"github.com/crowsnest-dev/crowsnest/controller/imageupdaters"
	"github.com/crowsnest-dev/crowsnest/controller/tenancy"
	"github.com/crowsnest-dev/crowsnest/watcher"
)

// noRequeue is a Watcher's queue with no engine behind it.
type noRequeue struct{}

func (noRequeue) RequeueNamespace(string) {}

// An ImageUpdater whose gitConfig asks for pull requests, as the
// apiserver stores it under argocd-image-updater's own CRD and the daemon's
// watcher reads it, gives each Application it selects a Git write-back
// that proposes the change in a pull request (GitHub, or a GitLab merge
// request where the applicationRef's pullRequest replaces the spec's) on
// a head branch named the argocd-image-updater way. The CRD refuses two
// providers or none, as crowsnest does.
func TestE2EImageUpdaterPullRequest(t *testing.T) {
	installImageUpdaterCRD(t)
	ns := env.CreateNamespace(t, "e2e-iu-pr")
	dyn := dynamic.NewForConfigOrDie(env.Config)

	for _, pr := range []string{`{}`, `{github: {}, gitlab: {}}`} {
		var obj map[string]any
		doc := `{apiVersion: argocd-image-updater.argoproj.io/v1alpha1, kind: ImageUpdater, metadata: {name: refused}, spec: {` +
			`writeBackConfig: {method: git, gitConfig: {pullRequest: ` + pr + `}}, applicationRefs: [{namePattern: shop, images: [{alias: shop, imageName: ghcr.io/acme/shop}]}]}}`
		if err := yaml.Unmarshal([]byte(doc), &obj); err != nil {
			t.Fatal(err)
		}
		_, err := dyn.Resource(imageUpdaterResource).Namespace(ns).Create(t.Context(), &unstructured.Unstructured{Object: obj}, metav1.CreateOptions{})
		if err == nil || !strings.Contains(err.Error(), "Exactly one of github or gitlab must be set") {
			t.Errorf("pullRequest %s: the CRD answered %v, want its refusal", pr, err)
		}
	}

	createImageUpdater(t, ns, `
apiVersion: argocd-image-updater.argoproj.io/v1alpha1
kind: ImageUpdater
metadata: {name: shop}
spec:
  writeBackConfig:
    method: git
    gitConfig: {branch: main, writeBackTarget: kustomization, pullRequest: {github: {}}}
  applicationRefs:
  - namePattern: shop
    images: [{alias: shop, imageName: "ghcr.io/acme/shop:^2"}]
  - namePattern: shop-eu
    writeBackConfig: {gitConfig: {pullRequest: {gitlab: {}}}}
    images: [{alias: shop, imageName: "ghcr.io/acme/shop:^2"}]
`)

	set := &imageupdaters.Set{Tenancy: &tenancy.Rules{}, Log: slog.New(slog.DiscardHandler)}
	w := &imageupdaters.Watcher{Client: dyn, Discovery: kubernetes.NewForConfigOrDie(env.Config).Discovery(), Namespaces: []string{ns},
		Mode: imageupdaters.ModeOn, Set: set, Queue: noRequeue{}, Log: slog.New(slog.DiscardHandler)}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Start(ctx, nil) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("watcher: %v", err)
		}
	})
	select {
	case <-w.SyncedDone():
	case err := <-done:
		done <- err // for the cleanup
		t.Fatalf("the watcher stopped before its first list: %v", err)
	case <-time.After(waitTimeout):
		t.Fatal("the ImageUpdater's first list never came in force")
	}
	if p := set.Problems(ns + "/shop"); len(p) > 0 {
		t.Errorf("problems: %v", p)
	}

	kustomization := imageupdate.Target{Kind: imageupdate.TargetKustomization}
	heads := map[string]bool{}
	for name, want := range map[string]imageupdate.WriteBack{
		"shop": {Method: imageupdate.MethodGit, Target: kustomization, Branch: "main",
			PullRequest: &imageupdate.PullRequest{Forge: "github", ImageUpdaterHead: true}},
		"shop-eu": {Method: imageupdate.MethodGit, Target: kustomization, Branch: "main",
			PullRequest: &imageupdate.PullRequest{Forge: "gitlab", ImageUpdaterHead: true}},
	} {
		app := &watcher.App{Namespace: ns, Name: name, Project: "default",
			Sources: []watcher.Source{{RepoURL: "https://github.com/acme/" + name + ".git", Path: "deploy", TargetRevision: "main"}}}
		spec, errs, ok := set.Match(t.Context(), app)
		if !ok || len(errs) > 0 {
			t.Fatalf("%s: selected %v, problems %v", name, ok, errs)
		}
		if d := cmp.Diff(want, spec.WriteBack); d != "" {
			t.Errorf("%s write-back (-want +got):\n%s", name, d)
		}
		changes, err := gitplan.Changes(app, spec, []imageupdate.Change{{Alias: "shop", Image: "ghcr.io/acme/shop", From: "2.3.0", To: "2.4.0", SourceIndex: -1}})
		if err != nil || len(changes) != 1 || changes[0].PullRequest == nil {
			t.Fatalf("%s: planned %+v, %v; want one change proposed in a pull request", name, changes, err)
		}
		pr := changes[0].PullRequest
		if !regexp.MustCompile(`^image-updater-[0-9a-f]{8}$`).MatchString(pr.Head) || pr.Forge != want.PullRequest.Forge || changes[0].Branch != "main" {
			t.Errorf("%s: pull request %+v into %q, want %s from image-updater-<8 hex digits> into main", name, pr, changes[0].Branch, want.PullRequest.Forge)
		}
		heads[pr.Head] = true
	}
	if len(heads) != 2 {
		t.Errorf("heads %v: want one per repository", heads)
	}
}
