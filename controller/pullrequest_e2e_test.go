package controller_test

import (
	"context"
	"encoding/base64"
	"log/slog"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"code.gitea.io/sdk/gitea"
	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/crowsnest-dev/crowsnest/controller"
	"github.com/crowsnest-dev/crowsnest/internal/giteaenv"
	"github.com/crowsnest-dev/crowsnest/internal/testreg"
	"github.com/crowsnest-dev/crowsnest/internal/testwait"
	"github.com/crowsnest-dev/crowsnest/registry"
	"github.com/crowsnest-dev/crowsnest/triggers"
	"github.com/crowsnest-dev/crowsnest/watcher"
	"github.com/crowsnest-dev/crowsnest/writeback/forge"
	gitwb "github.com/crowsnest-dev/crowsnest/writeback/git"
	"github.com/crowsnest-dev/crowsnest/writeback/git/collect"
)

// typedNote is one crowsnest event handed to the notifier, with its type.
type typedNote struct {
	Type, Key, Image, From, To, Commit, PullRequest string
}

type typedNotes struct {
	mu  sync.Mutex
	all []typedNote
}

func (*typedNotes) Announces() bool { return true }

func (n *typedNotes) OnEvent(app *watcher.App, ev triggers.Event) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.all = append(n.all, typedNote{Type: ev.Type, Key: app.Key(), Image: ev.Image, From: ev.From, To: ev.To, Commit: ev.Commit, PullRequest: ev.PullRequest})
}

func (n *typedNotes) list() []typedNote {
	n.mu.Lock()
	defer n.mu.Unlock()
	return slices.Clone(n.all)
}

// Pull-request write-back end to end, on a real Gitea and a real
// apiserver: an Application asking for pull requests gets one opened
// (Event, on-pr-opened; its branch untouched, nothing announced as
// deployed); a newer tag updates the same pull request (on-pr-updated);
// the same tag again does nothing; a person merges it through Gitea's
// API and crowsnest reports the merge commit: on-pr-merged, then
// image-updated, from main's 1.0.0 (not the 1.1.0 the pull request
// proposed first) to 1.2.0.
func TestPullRequestWriteBackOnGitea(t *testing.T) {
	reg, image := appRegistry(t)
	g := giteaenv.New(t)
	c, err := g.Client(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	repo := g.CreateRepo(t, "apps")
	owner := repo.Owner.UserName
	if _, _, err := c.CreateFile(owner, repo.Name, "web/kustomization.yaml", gitea.CreateFileOptions{
		FileOptions: gitea.FileOptions{Message: "seed", BranchName: "main"},
		Content:     base64.StdEncoding.EncodeToString([]byte(kustomizationOf(image, "1.0.0"))),
	}); err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(g.URL)
	if err != nil {
		t.Fatal(err)
	}

	ns := env.CreateNamespace(t, "pr")
	doc := strings.Replace(gitAppDoc("web", ns, image, g.CloneURL(repo.Name), "web", "main"), "  annotations:\n",
		"  annotations:\n    crowsnest.dev/pull-request: \"true\"\n    crowsnest.dev/pull-request.labels: image-update\n", 1)
	req := gitRequest(t, ns, doc, image)

	events, notes := &appEvents{}, &typedNotes{}
	promReg := prometheus.NewRegistry()
	w := testGitWriter(t)
	w.Forges = &gitwb.TokenForges{Resolver: &forge.Resolver{Hosts: map[string]forge.Host{u.Host: {Kind: forge.KindGitea}}}}
	images := &controller.ImageReconciler{Registry: &registry.Client{}, Events: events, Notifier: notes, Queue: appLookup(req),
		Metrics: controller.NewImageMetrics(promReg), Log: slog.New(slog.DiscardHandler), PullRequests: w, PullRequestInterval: 50 * time.Millisecond}
	images.Git = &collect.Batcher{Writer: w}
	// The clone URL carries the token: the head names a hash of it.
	const headPrefix = "crowsnest/default/main-"

	// Opened.
	runBatch(t, images, req)
	evs := events.of(req.Key)
	if len(evs) != 1 || evs[0].Reason != controller.EventPullRequestOpened || !strings.Contains(evs[0].Message, image+": 1.0.0 -> 1.1.0") {
		t.Fatalf("Events = %+v, want one PullRequestOpened for 1.0.0 -> 1.1.0", evs)
	}
	prs := g.OpenPullRequests(t, repo.Name)
	if len(prs) != 1 || !strings.HasPrefix(prs[0].Head.Ref, headPrefix) || prs[0].Base.Ref != "main" {
		t.Fatalf("open pull requests = %s, want one from %s<hash> into main", giteaenv.DescribePulls(prs), headPrefix)
	}
	pr := prs[0]
	head := pr.Head.Ref
	if !strings.Contains(evs[0].Message, pr.HTMLURL) {
		t.Errorf("the Event %q does not link the pull request %s", evs[0].Message, pr.HTMLURL)
	}
	if got := fileOn(t, c, owner, repo.Name, "main"); !strings.Contains(got, "newTag: 1.0.0") {
		t.Errorf("main changed before any review:\n%s", got)
	}
	want := []typedNote{{Type: triggers.EventPullRequestOpened, Key: req.Key, Image: image, From: "1.0.0", To: "1.1.0", Commit: pr.Head.Sha, PullRequest: pr.HTMLURL}}
	if diff := cmp.Diff(want, notes.list()); diff != "" {
		t.Errorf("notifications (-want +got):\n%s", diff)
	}

	// A newer tag: the same pull request, brought up to date.
	reg.Push(t, "team/app:1.2.0", testreg.Image(t, time.Date(2026, 1, 1, 2, 0, 0, 0, time.UTC), "linux/amd64"))
	images.Registry = &registry.Client{}
	runBatch(t, images, req)
	evs = events.of(req.Key)
	if len(evs) != 2 || evs[1].Reason != controller.EventPullRequestUpdated || !strings.Contains(evs[1].Message, "-> 1.2.0") {
		t.Fatalf("Events = %+v, want PullRequestUpdated to 1.2.0", evs)
	}
	prs = g.OpenPullRequests(t, repo.Name)
	if len(prs) != 1 || prs[0].Index != pr.Index {
		t.Fatalf("open pull requests = %s, want #%d alone", giteaenv.DescribePulls(prs), pr.Index)
	}
	pr = prs[0]
	if got := fileOn(t, c, owner, repo.Name, head); !strings.Contains(got, "newTag: 1.2.0") {
		t.Errorf("the head does not propose 1.2.0:\n%s", got)
	}

	// The same tag again: nothing.
	runBatch(t, images, req)
	if evs := events.of(req.Key); len(evs) != 2 {
		t.Errorf("Events after the same tag again = %+v, want none new", evs[2:])
	}

	// Merged by a person.
	testwait.For(t, "Gitea to find the pull request mergeable", func() bool {
		p, _, err := c.GetPullRequest(owner, repo.Name, pr.Index)
		return err == nil && p.Mergeable && p.Head != nil && p.Head.Sha == pr.Head.Sha
	})
	if ok, _, err := c.MergePullRequest(owner, repo.Name, pr.Index, gitea.MergePullRequestOption{Style: gitea.MergeStyleMerge}); err != nil || !ok {
		t.Fatalf("merging #%d: %v %v", pr.Index, ok, err)
	}
	merged, _, err := c.GetPullRequest(owner, repo.Name, pr.Index)
	if err != nil || merged.MergedCommitID == nil {
		t.Fatalf("the merged pull request: %+v, %v", merged, err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- images.RunPullRequests(ctx) }()
	testwait.For(t, "crowsnest to report the merge", func() bool { return len(events.of(req.Key)) == 3 })
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	evs = events.of(req.Key)
	if evs[2].Reason != controller.EventPullRequestMerged || !strings.Contains(evs[2].Message, (*merged.MergedCommitID)[:12]) ||
		!strings.Contains(evs[2].Message, image+": 1.0.0 -> 1.2.0") {
		t.Errorf("Event = %+v, want PullRequestMerged naming %s and main's 1.0.0 -> 1.2.0", evs[2], *merged.MergedCommitID)
	}
	got := notes.list()
	if diff := cmp.Diff([]typedNote{
		{Type: triggers.EventPullRequestMerged, Key: req.Key, Image: image, From: "1.0.0", To: "1.2.0", Commit: *merged.MergedCommitID, PullRequest: pr.HTMLURL},
		{Type: triggers.EventImageUpdated, Key: req.Key, Image: image, From: "1.0.0", To: "1.2.0", Commit: *merged.MergedCommitID},
	}, got[len(got)-2:]); diff != "" {
		t.Errorf("notifications after the merge, in order (-want +got):\n%s", diff)
	}
	if n := len(got); n != 4 || got[1].Type != triggers.EventPullRequestUpdated {
		t.Errorf("notifications = %+v, want pr-opened, pr-updated, pr-merged, image-updated", got)
	}
	if v := counter(t, promReg, "crowsnest_pull_requests_total", map[string]string{"action": "merged"}); v != 1 {
		t.Errorf("crowsnest_pull_requests_total{action=merged} = %v, want 1", v)
	}
}

func fileOn(t *testing.T, c *gitea.Client, owner, repo, ref string) string {
	t.Helper()
	b, _, err := c.GetFile(owner, repo, ref, "web/kustomization.yaml")
	if err != nil {
		t.Fatalf("reading web/kustomization.yaml on %s: %v", ref, err)
	}
	return string(b)
}
