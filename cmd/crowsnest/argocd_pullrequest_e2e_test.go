package main

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"code.gitea.io/sdk/gitea"
	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/crowsnest-dev/crowsnest/controller"
	"github.com/crowsnest-dev/crowsnest/internal/argocdenv"
	"github.com/crowsnest-dev/crowsnest/internal/giteaenv"
)

// Pull-request write-back with every part real: the daemon, a Gitea
// holding the Application's repository (Argo CD reads it, and crowsnest
// pushes and calls Gitea's API, with the same repository Secret) and Argo
// CD deploying it. A newer tag opens a pull request into main, and main
// stays as it was; a second newer tag updates the same pull request; a
// merge through Gitea's API is seen by crowsnest following the pull
// request, which asks Argo CD to refresh, and Argo CD deploys the merge
// commit. The webhook gets on-pr-opened, on-pr-updated, on-pr-merged and
// on-image-updated (both naming the merge commit), then Argo CD's catalog
// on-deployed: once each, in that order. Nothing more is proposed after.
func TestE2EArgoCDPullRequestOnGiteaMergedAndDeployed(t *testing.T) {
	g := giteaenv.New(t) // first: skips the test when Gitea is not built
	sink := startArgoNotifySink(t)
	w := newArgoWorldImage(t, "web-pr")
	c, err := g.Client(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	repo := g.CreateRepo(t, "deploy")
	owner := repo.Owner.UserName
	seedGitea(t, c, owner, repo.Name, kustomizeWebFiles(w))
	w.repoURL = g.URL + "/" + owner + "/" + repo.Name + ".git"
	w.startArgo(t, argocdenv.Repository{URL: w.repoURL, Username: giteaenv.Admin, Password: g.Token}, argocdenv.Options{AppResync: 5 * time.Second})
	w.createWebApp(t, "    argocd-image-updater.argoproj.io/image-list: web="+w.image+":^1\n"+
		"    argocd-image-updater.argoproj.io/write-back-method: git\n"+
		"    argocd-image-updater.argoproj.io/git-branch: main\n"+
		"    crowsnest.dev/pull-request: \"true\"\n"+
		argoSubscriptions("on-pr-opened", "on-pr-updated", "on-pr-merged", "on-image-updated", "on-deployed"), "{automated: {}}")
	w.waitDeployed(t, w.image+":1.0.0")
	createArgoNotificationsCM(t, w, sink.URL)
	gURL, err := url.Parse(g.URL)
	if err != nil {
		t.Fatal(err)
	}
	cfg := writeArgoNotifyConfig(t, w, true, fmt.Sprintf("registries: {pollInterval: 5s}\ngit:\n  forges:\n    %q: {kind: gitea}\n", gURL.Host))
	base := giteaBranchHead(t, c, owner, repo.Name, "main")
	w.daemon(t, "--config", cfg, "--pull-request-interval", "1s")

	// 1.1.0, there from the start: a pull request, main untouched. The
	// credentials are Argo CD's repository Secret: the head names no hash.
	const head = "crowsnest/default/main"
	source := "web/.argocd-source-" + w.app + ".yaml"
	waitFor(t, "crowsnest to open a pull request", func() bool { return len(g.OpenPullRequests(t, repo.Name)) > 0 })
	prs := g.OpenPullRequests(t, repo.Name)
	if len(prs) != 1 || prs[0].Head.Ref != head || prs[0].Base.Ref != "main" {
		t.Fatalf("open pull requests: %s, want one from %s into main", giteaenv.DescribePulls(prs), head)
	}
	pr := prs[0]
	if got := giteaFile(t, c, owner, repo.Name, head, source); !strings.Contains(got, w.image+":1.1.0") {
		t.Errorf("the pull request's %s does not propose 1.1.0:\n%s", source, got)
	}
	waitFor(t, "the PullRequestOpened Event", func() bool {
		return hasAppEvent(t, w.ns, w.app, controller.EventPullRequestOpened, pr.HTMLURL)
	})
	if got := giteaBranchHead(t, c, owner, repo.Name, "main"); got != base {
		t.Errorf("main moved from %s to %s while the pull request is open", base, got)
	}

	// 1.2.0 appears: the same pull request, brought up to date.
	pushTags(t, w.reg, "team/web", "1.2.0")
	waitFor(t, "the PullRequestUpdated Event", func() bool {
		return hasAppEvent(t, w.ns, w.app, controller.EventPullRequestUpdated, "-> 1.2.0")
	})
	if prs := g.OpenPullRequests(t, repo.Name); len(prs) != 1 || prs[0].Index != pr.Index {
		t.Fatalf("open pull requests: %s, want #%d alone", giteaenv.DescribePulls(prs), pr.Index)
	}
	if got := giteaFile(t, c, owner, repo.Name, head, source); !strings.Contains(got, w.image+":1.2.0") {
		t.Errorf("the pull request's %s does not propose 1.2.0:\n%s", source, got)
	}
	if got := giteaBranchHead(t, c, owner, repo.Name, "main"); got != base {
		t.Errorf("main moved from %s to %s while the pull request is open", base, got)
	}

	// Merged through Gitea's API: Argo CD deploys the merge commit.
	headSHA := giteaBranchHead(t, c, owner, repo.Name, head)
	waitFor(t, "Gitea to find the pull request mergeable", func() bool {
		p, _, err := c.GetPullRequest(owner, repo.Name, pr.Index)
		return err == nil && p.Mergeable && p.Head != nil && p.Head.Sha == headSHA
	})
	if ok, _, err := c.MergePullRequest(owner, repo.Name, pr.Index, gitea.MergePullRequestOption{Style: gitea.MergeStyleMerge}); err != nil || !ok {
		t.Fatalf("merging #%d: %v %v", pr.Index, ok, err)
	}
	merged, _, err := c.GetPullRequest(owner, repo.Name, pr.Index)
	if err != nil || merged.MergedCommitID == nil {
		t.Fatalf("the merged pull request: %+v, %v", merged, err)
	}
	merge := *merged.MergedCommitID
	app := w.waitDeployed(t, w.image+":1.2.0")
	if rev, _, _ := unstructured.NestedString(app.Object, "status", "sync", "revision"); rev != merge {
		t.Errorf("Argo CD's status.sync.revision is %s, want the merge commit %s", rev, merge)
	}
	if rev, _, _ := unstructured.NestedString(app.Object, "status", "operationState", "syncResult", "revision"); rev != merge {
		t.Errorf("Argo CD synced %s, want the merge commit %s", rev, merge)
	}
	waitFor(t, "the PullRequestMerged Event", func() bool {
		return hasAppEvent(t, w.ns, w.app, controller.EventPullRequestMerged, fmt.Sprintf("%s: (none) -> 1.2.0 (pull request #%d merged as %s", w.image, pr.Index, merge[:12]))
	})

	// Each notification once, in order, the merge's naming its commit.
	s := &notifySettler{w: w, sink: sink}
	s.settle(t, "the merge's deployment", map[string]int{
		"on-pr-opened": 1, "on-pr-updated": 1, "on-pr-merged": 1, "on-image-updated": 1, "on-deployed": 1,
	})
	order := slices.DeleteFunc(sink.order(), func(tr string) bool { return tr == "on-witness" })
	if diff := cmp.Diff([]string{"on-pr-opened", "on-pr-updated", "on-pr-merged", "on-image-updated", "on-deployed"}, order); diff != "" {
		t.Errorf("messages in the order they arrived (-want +got):\n%s", diff)
	}
	type announced struct {
		Event, From, To, Commit, PullRequest string
		Number                               int64
	}
	var got []announced
	for _, tr := range []string{"on-pr-merged", "on-image-updated"} {
		for _, b := range sink.bodies(tr) {
			var a announced
			if err := json.Unmarshal([]byte(b), &a); err != nil {
				t.Fatalf("%s: %v: %s", tr, err, b)
			}
			got = append(got, a)
		}
	}
	// From main's value, none (no .argocd-source file), not the 1.1.0 the
	// pull request proposed first.
	want := []announced{
		{Event: "pr-merged", To: "1.2.0", Commit: merge, PullRequest: pr.HTMLURL, Number: pr.Index},
		{Event: "image-updated", To: "1.2.0", Commit: merge},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("what the merge's notifications say (-want +got):\n%s", diff)
	}
	// Main has the values now: the polls since proposed nothing more.
	if prs := g.OpenPullRequests(t, repo.Name); len(prs) != 0 {
		t.Errorf("open pull requests after the merge: %s, want none", giteaenv.DescribePulls(prs))
	}
	if got := giteaBranchHead(t, c, owner, repo.Name, "main"); got != merge {
		t.Errorf("main is at %s after the merge %s", got, merge)
	}
}

// seedGitea commits files on main of Admin's repository, in one commit.
func seedGitea(t *testing.T, c *gitea.Client, owner, repo string, files map[string]string) {
	t.Helper()
	var ops []*gitea.ChangeFileOperation
	for _, path := range slices.Sorted(maps.Keys(files)) {
		ops = append(ops, &gitea.ChangeFileOperation{Operation: "create", Path: path, Content: base64.StdEncoding.EncodeToString([]byte(files[path]))})
	}
	if _, _, err := c.ChangeFiles(owner, repo, gitea.ChangeFilesOptions{Files: ops, Message: "initial", Branch: "main"}); err != nil {
		t.Fatalf("seeding %s/%s: %v", owner, repo, err)
	}
}

func giteaBranchHead(t *testing.T, c *gitea.Client, owner, repo, branch string) string {
	t.Helper()
	b, _, err := c.GetRepoBranch(owner, repo, branch)
	if err != nil {
		t.Fatalf("branch %s: %v", branch, err)
	}
	return b.Commit.ID
}

func giteaFile(t *testing.T, c *gitea.Client, owner, repo, ref, path string) string {
	t.Helper()
	b, _, err := c.GetFile(owner, repo, ref, path)
	if err != nil {
		t.Fatalf("reading %s on %s: %v", path, ref, err)
	}
	return string(b)
}
