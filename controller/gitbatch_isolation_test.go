package controller_test

import (
	"log/slog"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"

	"github.com/crowsnest-dev/crowsnest/controller"
	"github.com/crowsnest-dev/crowsnest/internal/testgit"
	"github.com/crowsnest-dev/crowsnest/registry"
	"github.com/crowsnest-dev/crowsnest/writeback/git/collect"
)

// withBranch adds a git-branch annotation to an Application doc of
// gitAppDoc.
func withBranch(doc, branch string) string {
	return strings.Replace(doc, "    argocd-image-updater.argoproj.io/write-back-target: kustomization\n",
		"    argocd-image-updater.argoproj.io/write-back-target: kustomization\n    argocd-image-updater.argoproj.io/git-branch: '"+branch+"'\n", 1)
}

// One team's Application whose branch cannot be used, in the same flush
// as another team's: the other team's change is committed and its
// Application hears only of its own commit; the bad one gets exactly one
// Warning naming its own problem and is retried alone. A branch the
// annotation reader can tell is bad ("a..b") never reaches the batch: an
// InvalidAnnotation Event, nothing written. One it cannot (a template
// that fails to render) fails in the writer, for that Application only.
func TestGitBatchBadBranchFailsOnlyItsApplication(t *testing.T) {
	_, image := appRegistry(t)
	srv := testgit.Start(t, testgit.Options{})
	repo := srv.CreateRepo(t, "apps")
	srv.Seed(t, "apps", "main", map[string]string{
		"team-a/web/kustomization.yaml":  kustomizationOf(image, "1.0.0"),
		"team-b/evil/kustomization.yaml": kustomizationOf(image, "1.0.0"),
		"team-c/dots/kustomization.yaml": kustomizationOf(image, "1.0.0"),
	}, "seed")

	nsA, nsB, nsC := env.CreateNamespace(t, "team-a"), env.CreateNamespace(t, "team-b"), env.CreateNamespace(t, "team-c")
	a := gitRequest(t, nsA, gitAppDoc("web", nsA, image, repo, "team-a/web", "main"), image)
	b := gitRequest(t, nsB, withBranch(gitAppDoc("evil", nsB, image, repo, "team-b/evil", "main"), "main:upd-{{(index .Images 5).NewTag}}"), image)
	c := gitRequest(t, nsC, withBranch(gitAppDoc("dots", nsC, image, repo, "team-c/dots", "main"), "a..b"), image)

	events, retries := &appEvents{}, &retryLog{}
	metrics := controller.NewImageMetrics(prometheus.NewRegistry())
	log := slog.New(slog.DiscardHandler)
	images := &controller.ImageReconciler{Registry: &registry.Client{}, Events: events, Queue: appsRetrying(retries, a, b, c),
		Metrics: metrics, Log: log}
	images.Git = &collect.Batcher{Writer: testGitWriter(t)}
	_, _ = images.Reconcile(t.Context(), c) // refused when read; whether it is an error is the reconcile's business
	runBatch(t, images, a, b)

	head := srv.Head(t, "apps", "main")
	type seen struct{ Type, Reason string }
	got := map[string][]seen{}
	for _, key := range []string{a.Key, b.Key, c.Key} {
		for _, e := range events.of(key) {
			got[key] = append(got[key], seen{e.Type, e.Reason})
		}
	}
	want := map[string][]seen{
		a.Key: {{corev1.EventTypeNormal, controller.EventImagesUpdated}},
		b.Key: {{corev1.EventTypeWarning, controller.EventImageUpdateFailed}},
		c.Key: {{corev1.EventTypeWarning, controller.EventInvalidAnnotation}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("Events per Application (-want +got):\n%s", diff)
	}
	if msg := events.of(a.Key)[0].Message; !strings.Contains(msg, "commit "+head[:12]) {
		t.Errorf("team-a's Event says %q; want its commit %s", msg, head[:12])
	}
	if msg := events.of(b.Key)[0].Message; !strings.Contains(msg, "evil: invalid change") || !strings.Contains(msg, "rendering branch template") || strings.Contains(msg, "web") {
		t.Errorf("team-b's Event says %q; want its own branch template's failure only", msg)
	}
	if msg := events.of(c.Key)[0].Message; !strings.Contains(msg, `invalid branch name "a..b"`) {
		t.Errorf("team-c's Event says %q; want the branch refused", msg)
	}
	if diff := cmp.Diff([]string{b.Key}, retries.list()); diff != "" {
		t.Errorf("retries (-want +got):\n%s", diff)
	}
	if n := len(srv.Log(t, "apps", "main")); n != 2 {
		t.Errorf("%d commits on main, want the seed and team-a's", n)
	}
	if got := srv.Branches(t, "apps"); !cmp.Equal(got, []string{"main"}) {
		t.Errorf("branches %q, want main only", got)
	}
}

// Two teams' Applications write to one repository and branch in one
// flush, each with its own credentials in its repoURL: two pushes, each
// authenticated as its own team, and each Application hears of the commit
// its own credentials pushed.
func TestGitBatchCredentialsInTheURLPushOnlyTheirOwn(t *testing.T) {
	_, image := appRegistry(t)
	srv := testgit.Start(t, testgit.Options{Accounts: map[string]string{"alice": "team-a-token", "bob": "team-b-token"}})
	srv.CreateRepo(t, "apps")
	srv.Seed(t, "apps", "main", map[string]string{
		"team-a/web/kustomization.yaml": kustomizationOf(image, "1.0.0"),
		"team-b/web/kustomization.yaml": kustomizationOf(image, "1.0.0"),
	}, "seed")
	as := func(user, token string) string {
		return strings.Replace(srv.RepoURL("apps"), "://", "://"+user+":"+token+"@", 1)
	}
	nsA, nsB := env.CreateNamespace(t, "team-a"), env.CreateNamespace(t, "team-b")
	a := gitRequest(t, nsA, gitAppDoc("web", nsA, image, as("alice", "team-a-token"), "team-a/web", "main"), image)
	b := gitRequest(t, nsB, gitAppDoc("web", nsB, image, as("bob", "team-b-token"), "team-b/web", "main"), image)

	events, retries := &appEvents{}, &retryLog{}
	metrics := controller.NewImageMetrics(prometheus.NewRegistry())
	log := slog.New(slog.DiscardHandler)
	images := &controller.ImageReconciler{Registry: &registry.Client{}, Events: events, Queue: appsRetrying(retries, a, b), Metrics: metrics, Log: log}
	images.Git = &collect.Batcher{Writer: testGitWriter(t)}
	runBatch(t, images, a, b)

	got := map[string]string{} // Application -> the user whose push its Event names
	for _, p := range srv.Pushes() {
		for _, h := range p.Heads {
			sha, ok := strings.CutPrefix(h, "main ")
			if !ok {
				continue
			}
			for _, key := range []string{a.Key, b.Key} {
				if evs := events.of(key); len(evs) == 1 && strings.Contains(evs[0].Message, "commit "+sha[:12]) {
					got[key] = p.User
				}
			}
		}
	}
	if diff := cmp.Diff(map[string]string{a.Key: "alice", b.Key: "bob"}, got); diff != "" {
		t.Errorf("who pushed each Application's commit (-want +got):\n%s\nevents: %+v", diff, events.all)
	}
	if r := retries.list(); len(r) != 0 {
		t.Errorf("retried %q, want nothing", r)
	}
}
