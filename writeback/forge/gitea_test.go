package forge_test

import (
	"encoding/base64"
	"os"
	"testing"

	"code.gitea.io/sdk/gitea"
	"github.com/google/go-cmp/cmp"

	"github.com/crowsnest-dev/crowsnest/internal/giteaenv"
	"github.com/crowsnest-dev/crowsnest/internal/testwait"
	"github.com/crowsnest-dev/crowsnest/writeback/forge"
)

func TestMain(m *testing.M) { os.Exit(giteaenv.RunMain(m)) }

// pushBranch makes branch from main on g's repo with one new file, as a
// write-back's push would, and returns the branch's commit.
func pushBranch(t *testing.T, c *gitea.Client, repo *gitea.Repository, branch, file string) string {
	t.Helper()
	_, _, err := c.CreateFile(repo.Owner.UserName, repo.Name, file, gitea.CreateFileOptions{
		FileOptions: gitea.FileOptions{Message: "update " + file, BranchName: "main", NewBranchName: branch},
		Content:     base64.StdEncoding.EncodeToString([]byte("tag: 1.2.3\n")),
	})
	if err != nil {
		t.Fatalf("pushing %s: %v", branch, err)
	}
	b, _, err := c.GetRepoBranch(repo.Owner.UserName, repo.Name, branch)
	if err != nil {
		t.Fatal(err)
	}
	return b.Commit.ID
}

// The Gitea client against a real Gitea: a pull request is found only
// while it is open, opened with the repository's labels (a missing one
// left out), edited in place, closed with a comment, and a merge made by
// a person is read back with the merge commit on the base branch.
func TestGiteaPullRequestLifecycle(t *testing.T) {
	g := giteaenv.Shared(t)
	c, err := g.Client(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	repo := g.CreateRepo(t, "forge")
	owner := repo.Owner.UserName
	if _, _, err := c.CreateLabel(owner, repo.Name, gitea.CreateLabelOption{Name: "image-update", Color: "#00aabb"}); err != nil {
		t.Fatal(err)
	}
	f := forge.NewGitea(g.Token, forge.Options{})
	r := forge.Repo{API: g.URL + "/api/v1", Owner: owner, Name: repo.Name}
	ctx := t.Context()

	head := "crowsnest/web-main"
	sha := pushBranch(t, c, repo, head, "web.yaml")
	if pr, err := f.Find(ctx, r, head, "main"); err != nil || pr != nil {
		t.Fatalf("Find before opening = %+v, %v; want none", pr, err)
	}
	opened, err := f.Open(ctx, r, forge.Proposal{Head: head, Base: "main", Title: "Update web to 1.2.3", Body: "web: 1.2.2 → 1.2.3",
		Labels: []string{"image-update", "no-such-label"}})
	if err != nil {
		t.Fatal(err)
	}
	want := &forge.PullRequest{Number: opened.Number, URL: opened.URL, Head: head, Base: "main", HeadSHA: sha, State: forge.Open,
		Title: "Update web to 1.2.3", Body: "web: 1.2.2 → 1.2.3", Labels: []string{"image-update"}}
	if diff := cmp.Diff(want, opened); diff != "" || opened.URL == "" {
		t.Errorf("Open (-want +got):\n%s", diff)
	}
	found, err := f.Find(ctx, r, head, "main")
	if err != nil || found == nil || found.Number != opened.Number {
		t.Fatalf("Find = %+v, %v; want #%d", found, err, opened.Number)
	}
	if other, err := f.Find(ctx, r, head, "release"); err != nil || other != nil {
		t.Errorf("Find into another base = %+v, %v; want none", other, err)
	}

	edited, err := f.Edit(ctx, r, opened.Number, "Update web to 1.2.4", "web: 1.2.2 → 1.2.4")
	if err != nil {
		t.Fatal(err)
	}
	if edited.Number != opened.Number || edited.Title != "Update web to 1.2.4" || edited.Body != "web: 1.2.2 → 1.2.4" {
		t.Errorf("Edit = %+v", edited)
	}

	if err := f.Close(ctx, r, opened.Number, "Superseded by a newer update."); err != nil {
		t.Fatal(err)
	}
	closed, err := f.Get(ctx, r, opened.Number)
	if err != nil || closed.State != forge.Closed || closed.MergeCommit != "" {
		t.Errorf("Get after Close = %+v, %v; want closed, not merged", closed, err)
	}
	comments, _, err := c.ListIssueComments(owner, repo.Name, int64(opened.Number), gitea.ListIssueCommentOptions{})
	if err != nil || len(comments) != 1 || comments[0].Body != "Superseded by a newer update." {
		t.Errorf("comments = %+v, %v; want the closing comment", comments, err)
	}
	if pr, err := f.Find(ctx, r, head, "main"); err != nil || pr != nil {
		t.Errorf("Find after Close = %+v, %v; want none", pr, err)
	}

	// A person merges the next one.
	head2 := "crowsnest/api-main"
	pushBranch(t, c, repo, head2, "api.yaml")
	pr, err := f.Open(ctx, r, forge.Proposal{Head: head2, Base: "main", Title: "Update api", Body: "api"})
	if err != nil {
		t.Fatal(err)
	}
	// Gitea checks a new pull request in the background: it merges once
	// that check says mergeable.
	testwait.For(t, "Gitea to find the pull request mergeable", func() bool {
		p, _, err := c.GetPullRequest(owner, repo.Name, int64(pr.Number))
		return err == nil && p.Mergeable
	})
	if ok, _, err := c.MergePullRequest(owner, repo.Name, int64(pr.Number), gitea.MergePullRequestOption{Style: gitea.MergeStyleMerge}); err != nil || !ok {
		t.Fatalf("merging #%d: %v, %v\n%s", pr.Number, ok, err, g.Logs())
	}
	merged, err := f.Get(ctx, r, pr.Number)
	if err != nil {
		t.Fatal(err)
	}
	main, _, err := c.GetRepoBranch(owner, repo.Name, "main")
	if err != nil {
		t.Fatal(err)
	}
	if merged.State != forge.Merged || merged.MergeCommit != main.Commit.ID {
		t.Errorf("Get after the merge = state %s, merge commit %q; want merged at main's %s", merged.State, merged.MergeCommit, main.Commit.ID)
	}
}

// What reviewers see: a draft, assignees and requested reviewers as
// asked, and an auto-merge the forge carries out by itself once nothing
// holds it (this repository requires no checks or approvals).
func TestGiteaProposalOptions(t *testing.T) {
	g := giteaenv.Shared(t)
	c, err := g.Client(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	repo := g.CreateRepo(t, "forge-options")
	owner := repo.Owner.UserName
	reviewer := "reviewer-" + repo.Name
	mustChange := false
	if _, _, err := c.AdminCreateUser(gitea.CreateUserOption{Username: reviewer, Email: reviewer + "@example.com", Password: "reviewer-password-1", MustChangePassword: &mustChange}); err != nil {
		t.Fatal(err)
	}
	write := gitea.AccessModeWrite
	if _, err := c.AddCollaborator(owner, repo.Name, reviewer, gitea.AddCollaboratorOption{Permission: &write}); err != nil {
		t.Fatal(err)
	}
	f := forge.NewGitea(g.Token, forge.Options{})
	r := forge.Repo{API: g.URL + "/api/v1", Owner: owner, Name: repo.Name}

	pushBranch(t, c, repo, "crowsnest/draft", "draft.yaml")
	draft, err := f.Open(t.Context(), r, forge.Proposal{Head: "crowsnest/draft", Base: "main", Title: "Update web", Draft: true,
		Reviewers: []string{reviewer}, Assignees: []string{reviewer}})
	if err != nil {
		t.Fatal(err)
	}
	got, _, err := c.GetPullRequest(owner, repo.Name, int64(draft.Number))
	if err != nil {
		t.Fatal(err)
	}
	var assignees, reviewers []string
	for _, u := range got.Assignees {
		assignees = append(assignees, u.UserName)
	}
	for _, u := range got.RequestedReviewers {
		reviewers = append(reviewers, u.UserName)
	}
	if !got.Draft || !cmp.Equal(assignees, []string{reviewer}) || !cmp.Equal(reviewers, []string{reviewer}) {
		t.Errorf("draft %v, assignees %q, reviewers %q; want a draft assigned to and reviewed by %s", got.Draft, assignees, reviewers, reviewer)
	}

	pushBranch(t, c, repo, "crowsnest/auto", "auto.yaml")
	auto, err := f.Open(t.Context(), r, forge.Proposal{Head: "crowsnest/auto", Base: "main", Title: "Update api", AutoMerge: true})
	if err != nil {
		t.Fatal(err)
	}
	testwait.For(t, "Gitea to merge the auto-merge pull request", func() bool {
		pr, err := f.Get(t.Context(), r, auto.Number)
		return err == nil && pr.State == forge.Merged && pr.MergeCommit != ""
	})
}
