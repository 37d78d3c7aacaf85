package giteaenv_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"code.gitea.io/sdk/gitea"

	"github.com/crowsnest-dev/crowsnest/internal/giteaenv"
	"github.com/crowsnest-dev/crowsnest/internal/testgit"
)

func TestMain(m *testing.M) { os.Exit(giteaenv.RunMain(m)) }

// The environment is a working Gitea: a branch pushed with git over HTTP
// becomes a pull request through the API, the API merges it, and the
// merge commit, with the old main and the branch as its parents, is main.
func TestGiteaMergesAPullRequestPushedOverHTTP(t *testing.T) {
	g := giteaenv.Shared(t)
	c, err := g.Client(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	repo := g.CreateRepo(t, "smoke")
	owner := repo.Owner.UserName

	dir := t.TempDir()
	git := func(args ...string) string {
		t.Helper()
		cmd := exec.CommandContext(t.Context(), "git", args...)
		cmd.Dir, cmd.Env = dir, testgit.Env(dir)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return strings.TrimSpace(string(out))
	}
	git("clone", "--quiet", g.CloneURL(repo.Name), "work")
	dir = filepath.Join(dir, "work")
	base := git("rev-parse", "HEAD")
	git("checkout", "--quiet", "-b", "image-update")
	if err := os.WriteFile(filepath.Join(dir, "values.yaml"), []byte("image:\n  tag: 1.2.3\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	git("add", "values.yaml")
	git("commit", "--quiet", "-m", "update the image to 1.2.3")
	head := git("rev-parse", "HEAD")
	git("push", "--quiet", "origin", "image-update")

	pr, _, err := c.CreatePullRequest(owner, repo.Name, gitea.CreatePullRequestOption{
		Head: "image-update", Base: "main", Title: "update the image to 1.2.3",
	})
	if err != nil {
		t.Fatalf("opening the pull request: %v\n%s", err, g.Logs())
	}
	if !pr.Mergeable {
		t.Fatalf("the new pull request is not mergeable\n%s", g.Logs())
	}
	merged, _, err := c.MergePullRequest(owner, repo.Name, pr.Index, gitea.MergePullRequestOption{Style: gitea.MergeStyleMerge})
	if err != nil || !merged {
		t.Fatalf("merging the pull request: merged %v, %v\n%s", merged, err, g.Logs())
	}

	pr, _, err = c.GetPullRequest(owner, repo.Name, pr.Index)
	if err != nil {
		t.Fatal(err)
	}
	if !pr.HasMerged || pr.MergedCommitID == nil {
		t.Fatalf("the pull request is not merged: merged %v, merge commit %v", pr.HasMerged, pr.MergedCommitID)
	}
	branch, _, err := c.GetRepoBranch(owner, repo.Name, "main")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := branch.Commit.ID, *pr.MergedCommitID; got != want {
		t.Errorf("main is at %s, want the merge commit %s", got, want)
	}
	// What a Git client sees: main is a merge of the old main and the branch.
	git("fetch", "--quiet", "origin", "main")
	if got, want := git("rev-parse", "FETCH_HEAD^1", "FETCH_HEAD^2"), base+"\n"+head; got != want {
		t.Errorf("the parents of main are\n%s\nwant the old main and the branch\n%s", got, want)
	}
}

// A Gitea of a test's own (New) serves what CreateRepo makes: an initial
// commit on main, which a Git client reads with the clone URL's
// credentials.
func TestNewGiteaServesARepositoryOfItsOwn(t *testing.T) {
	g := giteaenv.New(t)
	repo := g.CreateRepo(t, "own")
	cmd := exec.CommandContext(t.Context(), "git", "ls-remote", g.CloneURL(repo.Name), "refs/heads/main")
	cmd.Env = testgit.Env(t.TempDir())
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git ls-remote: %v\n%s", err, out)
	}
	if fields := strings.Fields(string(out)); len(fields) != 2 || len(fields[0]) != 40 {
		t.Errorf("git ls-remote refs/heads/main = %q, want one commit", out)
	}
}
