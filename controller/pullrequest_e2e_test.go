package controller_test

import (
	"context"
	"encoding/base64"
	"fmt"
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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/crowsnest-dev/crowsnest/config"
	"github.com/crowsnest-dev/crowsnest/controller"
	"github.com/crowsnest-dev/crowsnest/internal/giteaenv"
	"github.com/crowsnest-dev/crowsnest/internal/kubecore/kubecoretest"
	"github.com/crowsnest-dev/crowsnest/internal/testreg"
	"github.com/crowsnest-dev/crowsnest/internal/testwait"
	"github.com/crowsnest-dev/crowsnest/registry"
	"github.com/crowsnest-dev/crowsnest/triggers"
	"github.com/crowsnest-dev/crowsnest/watcher"
	"github.com/crowsnest-dev/crowsnest/writeback/forge"
	gitwb "github.com/crowsnest-dev/crowsnest/writeback/git"
	"github.com/crowsnest-dev/crowsnest/writeback/git/collect"
	"github.com/crowsnest-dev/crowsnest/writeback/journal"
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

// prEnv is an Application in pull-request mode whose repository is on a
// Gitea of the test's, and a reconciler that writes it.
type prEnv struct {
	reg         *testreg.OCI
	image       string
	c           *gitea.Client
	owner, repo string
	req         controller.Request
	events      *appEvents
	notes       *typedNotes
	promReg     *prometheus.Registry
	images      *controller.ImageReconciler
}

func newPREnv(t *testing.T) *prEnv {
	t.Helper()
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

	e := &prEnv{reg: reg, image: image, c: c, owner: owner, repo: repo.Name, req: req, events: &appEvents{}, notes: &typedNotes{},
		promReg: prometheus.NewRegistry()}
	w := testGitWriter(t)
	w.Forges = &gitwb.TokenForges{Resolver: &forge.Resolver{Hosts: map[string]forge.Host{u.Host: {Kind: forge.KindGitea}},
		Options: forge.Options{Metrics: forge.NewMetrics(e.promReg)}}}
	e.images = &controller.ImageReconciler{Registry: &registry.Client{}, Events: e.events, Notifier: e.notes, Queue: appLookup(req),
		Metrics: controller.NewImageMetrics(e.promReg), Log: slog.New(slog.DiscardHandler), PullRequests: w, PullRequestInterval: 50 * time.Millisecond}
	e.images.Git = &collect.Batcher{Writer: w}
	return e
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
	e := newPREnv(t)
	reg, image, c, owner, req, events, notes, promReg, images := e.reg, e.image, e.c, e.owner, e.req, e.events, e.notes, e.promReg, e.images
	repo := &gitea.Repository{Name: e.repo}
	// The clone URL carries the token: the head names a hash of it.
	const headPrefix = "crowsnest/default/main-"

	// Opened.
	runBatch(t, images, req)
	evs := events.of(req.Key)
	if len(evs) != 1 || evs[0].Reason != controller.EventPullRequestOpened || !strings.Contains(evs[0].Message, image+": 1.0.0 -> 1.1.0") {
		t.Fatalf("Events = %+v, want one PullRequestOpened for 1.0.0 -> 1.1.0", evs)
	}
	prs := openPullRequests(t, c, owner, repo.Name)
	if len(prs) != 1 || !strings.HasPrefix(prs[0].Head.Ref, headPrefix) || prs[0].Base.Ref != "main" {
		t.Fatalf("open pull requests = %s, want one from %s<hash> into main", describePulls(prs), headPrefix)
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

	// A newer tag, built with its source's labels: the same pull request,
	// brought up to date, its body from main's 1.0.0 to 1.2.0 with the
	// commit the image says it was built from.
	const rev = "0123456789abcdef0123456789abcdef01234567"
	reg.Push(t, "team/app:1.2.0", testreg.Labeled(t, testreg.Image(t, time.Date(2026, 1, 1, 2, 0, 0, 0, time.UTC), "linux/amd64"),
		map[string]string{"org.opencontainers.image.revision": rev, "org.opencontainers.image.source": "https://github.com/acme/app"}))
	images.Registry = &registry.Client{}
	runBatch(t, images, req)
	evs = events.of(req.Key)
	if len(evs) != 2 || evs[1].Reason != controller.EventPullRequestUpdated || !strings.Contains(evs[1].Message, "-> 1.2.0") {
		t.Fatalf("Events = %+v, want PullRequestUpdated to 1.2.0", evs)
	}
	prs = openPullRequests(t, c, owner, repo.Name)
	if len(prs) != 1 || prs[0].Index != pr.Index {
		t.Fatalf("open pull requests = %s, want #%d alone", describePulls(prs), pr.Index)
	}
	pr = prs[0]
	if got := fileOn(t, c, owner, repo.Name, head); !strings.Contains(got, "newTag: 1.2.0") {
		t.Errorf("the head does not propose 1.2.0:\n%s", got)
	}
	if row := "| web | " + image + " | `1.0.0` | `1.2.0` | [`0123456789ab`](https://github.com/acme/app/commit/" + rev + ") |"; !strings.Contains(pr.Body, row) {
		t.Errorf("pull request body %q, want the row %s", pr.Body, row)
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
	followUntil(t, images, "crowsnest to report the merge", func() bool { return len(events.of(req.Key)) == 3 })
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

func openPullRequests(t *testing.T, c *gitea.Client, owner, repo string) []*gitea.PullRequest {
	t.Helper()
	prs, _, err := c.ListRepoPullRequests(owner, repo, gitea.ListPullRequestsOptions{State: gitea.StateOpen})
	if err != nil {
		t.Fatal(err)
	}
	return prs
}

func describePulls(prs []*gitea.PullRequest) string { return giteaenv.DescribePulls(prs) }

func fileOn(t *testing.T, c *gitea.Client, owner, repo, ref string) string {
	t.Helper()
	b, _, err := c.GetFile(owner, repo, ref, "web/kustomization.yaml")
	if err != nil {
		t.Fatalf("reading web/kustomization.yaml on %s: %v", ref, err)
	}
	return string(b)
}

// A deny window holds a pull request like a push, unless the config lets
// pull requests through (git.pullRequestsInDenyWindows): merging one is
// the deploy, which a person does.
func TestPullRequestInDenyWindow(t *testing.T) {
	for _, allow := range []bool{false, true} {
		t.Run(fmt.Sprintf("pullRequestsInDenyWindows=%t", allow), func(t *testing.T) {
			e := newPREnv(t)
			cfg := config.Default()
			cfg.Windows = []config.SyncWindow{{Kind: "deny", Schedule: "* * * * *", Duration: config.Duration{Duration: time.Hour},
				Applications: []string{"*"}}}
			cfg.Git.PullRequestsInDenyWindows = allow
			e.images.Windows = &controller.WindowSource{Config: func() *config.Config { return cfg },
				Log: slog.New(slog.DiscardHandler)}
			runBatch(t, e.images, e.req)
			evs := e.events.of(e.req.Key)
			prs := openPullRequests(t, e.c, e.owner, e.repo)
			switch {
			case allow && (len(prs) != 1 || len(evs) != 1 || evs[0].Reason != controller.EventPullRequestOpened):
				t.Errorf("allowed in deny windows: pull requests %s, Events %+v; want one opened", describePulls(prs), evs)
			case !allow && (len(prs) != 0 || len(evs) != 1 || evs[0].Reason != controller.EventImageUpdateHeld):
				t.Errorf("held by the deny window: pull requests %s, Events %+v; want none opened, ImageUpdateHeld", describePulls(prs), evs)
			}
		})
	}
}

// A pull request a person closes without merging: on-pr-closed, and its
// version is not proposed again, also by the next process (the write
// journal, in ConfigMaps of the real apiserver, keeps it); a newer one
// opens a new pull request.
func TestPullRequestClosedByAPerson(t *testing.T) {
	e := newPREnv(t)
	store := &journal.ConfigMaps{Client: kubecoretest.New(t, env.Config), Namespace: env.CreateNamespace(t, "journal")}
	e.images.Journal = store
	runBatch(t, e.images, e.req)
	prs := openPullRequests(t, e.c, e.owner, e.repo)
	if len(prs) != 1 {
		t.Fatalf("open pull requests = %s, want one", describePulls(prs))
	}
	first := prs[0]
	closed := gitea.StateClosed
	if _, _, err := e.c.EditPullRequest(e.owner, e.repo, first.Index, gitea.EditPullRequestOption{State: &closed}); err != nil {
		t.Fatal(err)
	}
	followUntil(t, e.images, "crowsnest to report the close", func() bool { return len(e.events.of(e.req.Key)) == 2 })
	if ev := e.events.of(e.req.Key)[1]; ev.Reason != controller.EventPullRequestClosed {
		t.Errorf("Event = %+v, want PullRequestClosed", ev)
	}
	if n := e.notes.list(); len(n) != 2 || n[1].Type != triggers.EventPullRequestClosed || n[1].PullRequest != first.HTMLURL {
		t.Errorf("notifications = %+v, want pr-opened, pr-closed", n)
	}

	// The declined version again: nothing.
	runBatch(t, e.images, e.req)
	if prs := openPullRequests(t, e.c, e.owner, e.repo); len(prs) != 0 {
		t.Errorf("the declined version was proposed again: %s", describePulls(prs))
	}
	if evs := e.events.of(e.req.Key); len(evs) != 2 {
		t.Errorf("Events after the declined version again: %+v", evs[2:])
	}
	// Another process, the same journal: still nothing.
	w := e.images.PullRequests.(*gitwb.Writer)
	e.images = &controller.ImageReconciler{Registry: &registry.Client{}, Events: e.events, Notifier: e.notes, Queue: appLookup(e.req),
		Log: slog.New(slog.DiscardHandler), PullRequests: w, PullRequestInterval: 50 * time.Millisecond, Journal: store,
		Git: &collect.Batcher{Writer: w}}
	runBatch(t, e.images, e.req)
	if prs := openPullRequests(t, e.c, e.owner, e.repo); len(prs) != 0 {
		t.Errorf("the declined version was proposed again after a restart: %s", describePulls(prs))
	}

	// A newer version: a new pull request.
	e.reg.Push(t, "team/app:1.2.0", testreg.Image(t, time.Date(2026, 1, 1, 2, 0, 0, 0, time.UTC), "linux/amd64"))
	e.images.Registry = &registry.Client{}
	runBatch(t, e.images, e.req)
	prs = openPullRequests(t, e.c, e.owner, e.repo)
	if len(prs) != 1 || prs[0].Index == first.Index {
		t.Fatalf("open pull requests = %s, want a new one", describePulls(prs))
	}
	if got := fileOn(t, e.c, e.owner, e.repo, prs[0].Head.Ref); !strings.Contains(got, "newTag: 1.2.0") {
		t.Errorf("the new pull request does not propose 1.2.0:\n%s", got)
	}
}

// A pull request none of whose Applications asks for anything any more
// (here: it runs the proposed version already, deployed another way) is
// closed by crowsnest with a comment saying why; one still wanted is not.
func TestPullRequestNoLongerWanted(t *testing.T) {
	e := newPREnv(t)
	runBatch(t, e.images, e.req)
	prs := openPullRequests(t, e.c, e.owner, e.repo)
	if len(prs) != 1 {
		t.Fatalf("open pull requests = %s, want one", describePulls(prs))
	}
	pr := prs[0]
	// Still wanted: a whole look leaves it open (two looks begun: the
	// first is over).
	gets := func() float64 {
		return counter(t, e.promReg, "crowsnest_forge_requests_total", map[string]string{"forge": "gitea", "method": "GET", "code": "200"})
	}
	from := gets()
	followUntil(t, e.images, "two looks at the open pull request", func() bool { return gets() >= from+2 })
	if p, _, err := e.c.GetPullRequest(e.owner, e.repo, pr.Index); err != nil || p.State != gitea.StateOpen {
		t.Fatalf("a pull request still wanted: %+v, %v; want it open", p, err)
	}

	// The Application now runs 1.1.0 (deployed another way).
	ns, name, _ := strings.Cut(e.req.Key, "/")
	u, err := apps(t).Namespace(ns).Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	u.Object["status"] = map[string]any{"summary": map[string]any{"images": []any{e.image + ":1.1.0"}}}
	if _, err := apps(t).Namespace(ns).Update(t.Context(), u, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	req := requestOf(t, ns, name)
	e.images.Queue = appLookup(req)
	if _, err := e.images.Reconcile(t.Context(), req); err != nil {
		t.Fatal(err)
	}
	followUntil(t, e.images, "crowsnest to close the pull request nobody wants", func() bool {
		p, _, err := e.c.GetPullRequest(e.owner, e.repo, pr.Index)
		return err == nil && p.State == gitea.StateClosed
	})
	comments, _, err := e.c.ListIssueComments(e.owner, e.repo, pr.Index, gitea.ListIssueCommentOptions{})
	if err != nil || len(comments) != 1 || !strings.Contains(comments[0].Body, "ask for nothing any more") || !strings.Contains(comments[0].Body, e.req.Key) {
		t.Errorf("comments = %+v, %v; want one saying %s asks for nothing any more", comments, err, e.req.Key)
	}
	if p, _, _ := e.c.GetPullRequest(e.owner, e.repo, pr.Index); p != nil && p.HasMerged {
		t.Error("the pull request was merged")
	}
}

// followUntil runs images' follow-up of open pull requests until cond
// holds.
func followUntil(t *testing.T, images *controller.ImageReconciler, what string, cond func() bool) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- images.RunPullRequests(ctx) }()
	testwait.For(t, what, cond)
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
