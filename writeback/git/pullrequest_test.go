package git

import (
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"code.gitea.io/sdk/gitea"

	"github.com/crowsnest-dev/crowsnest/internal/giteaenv"
	"github.com/crowsnest-dev/crowsnest/internal/testgit"
	"github.com/crowsnest-dev/crowsnest/internal/testwait"
	"github.com/crowsnest-dev/crowsnest/writeback/forge"
)

// giteaRepo is a repository on a real Gitea holding the kustomization
// golden original at web/, with a writer whose pull requests go to that
// Gitea.
func giteaRepo(t *testing.T) (*giteaenv.Gitea, *gitea.Client, *gitea.Repository, *Writer) {
	t.Helper()
	g := giteaenv.New(t)
	c, err := g.Client(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	repo := g.CreateRepo(t, "pr")
	_, _, err = c.CreateFile(repo.Owner.UserName, repo.Name, "web/kustomization.yaml", gitea.CreateFileOptions{
		FileOptions: gitea.FileOptions{Message: "seed", BranchName: "main"},
		Content:     base64.StdEncoding.EncodeToString([]byte(golden(t, "kustomization-update", "original", "kustomization.yaml"))),
	})
	if err != nil {
		t.Fatal(err)
	}
	return g, c, repo, giteaRepoWriter(t, g)
}

// giteaRepoWriter is a writer whose pull requests go to g.
func giteaRepoWriter(t *testing.T, g *giteaenv.Gitea) *Writer {
	t.Helper()
	u, err := url.Parse(g.URL)
	if err != nil {
		t.Fatal(err)
	}
	w := newWriter(t, nil)
	w.Forges = &TokenForges{Resolver: &forge.Resolver{Hosts: map[string]forge.Host{u.Host: {Kind: forge.KindGitea}}}}
	return w
}

// webTag reads web's newTag in the kustomization on ref.
func webTag(t *testing.T, c *gitea.Client, repo *gitea.Repository, ref string) string {
	t.Helper()
	b, _, err := c.GetFile(repo.Owner.UserName, repo.Name, ref, "web/kustomization.yaml")
	if err != nil {
		t.Fatalf("reading web/kustomization.yaml on %s: %v", ref, err)
	}
	_, rest, _ := strings.Cut(string(b), "name: ghcr.io/acme/web")
	_, tag, _ := strings.Cut(rest, "newTag: ")
	tag, _, _ = strings.Cut(tag, " ")
	return strings.Trim(tag, `"'`)
}

func openPulls(t *testing.T, c *gitea.Client, repo *gitea.Repository) []*gitea.PullRequest {
	t.Helper()
	prs, _, err := c.ListRepoPullRequests(repo.Owner.UserName, repo.Name, gitea.ListPullRequestsOptions{State: gitea.StateOpen})
	if err != nil {
		t.Fatal(err)
	}
	return prs
}

// Pull-request mode against a real Gitea: the first change opens a pull
// request from crowsnest's head branch and leaves the base alone; the same
// change again does nothing; a newer tag goes on the same pull request;
// after a person merges it, the next change opens a new one from a head
// made again from the base (nothing of the merged one in it).
func TestPullRequestModeOnGitea(t *testing.T) {
	g, c, repo, w := giteaRepo(t)
	owner := repo.Owner.UserName
	change := func(tag string) Change {
		// The clone URL carries the admin's token: it pushes and calls
		// the API.
		ch := kustomizeWeb(g.CloneURL(repo.Name), tag)
		ch.PullRequest = &PullRequest{Head: "crowsnest/main"}
		return ch
	}

	// A dry run asks the forge only whether a pull request is open.
	planPR := func(tag string) *PlannedPullRequest {
		t.Helper()
		plans, err := w.Plan(t.Context(), []Change{change(tag)})
		if err != nil || len(plans) != 1 || plans[0].PullRequest == nil {
			t.Fatalf("Plan = %+v, %v; want one plan with a pull request", plans, err)
		}
		return plans[0].PullRequest
	}
	p := planPR("1.2.0")
	if p.Action != "open" || p.Head != "crowsnest/main" || p.Base != "main" || !strings.Contains(p.Title, "web") || p.Number != 0 {
		t.Errorf("planned pull request = %+v, want one opened from crowsnest/main into main", p)
	}
	// Every request opening it would send, made by the forge's client
	// and kept from the forge, the token redacted.
	if len(p.Requests) == 0 || p.Requests[0].Method != "POST" || !strings.HasSuffix(p.Requests[0].URL, "/api/v1/repos/"+owner+"/"+repo.Name+"/pulls") ||
		!strings.Contains(p.Requests[0].Body, `"head":"crowsnest/main"`) || p.Requests[0].Header.Get("Authorization") != "<redacted>" {
		t.Errorf("planned requests = %+v, want the POST of the pull request first, its token redacted", p.Requests)
	}
	for _, r := range p.Requests {
		if strings.Contains(r.URL+r.Body+fmt.Sprint(r.Header), g.Token) {
			t.Errorf("a planned request shows the token: %+v", r)
		}
	}
	if prs := openPulls(t, c, repo); len(prs) != 0 {
		t.Fatalf("the plan opened %d pull requests", len(prs))
	}

	first := mustApply(t, w, change("1.2.0"))
	if first.Err != nil || first.PullRequestAction != PullRequestOpened || first.PullRequest == nil || first.CommitSHA == "" {
		t.Fatalf("first write = %+v, want a pull request opened", first)
	}
	pr := first.PullRequest
	if pr.Head != "crowsnest/main" || pr.Base != "main" || pr.HeadSHA != first.CommitSHA || pr.State != forge.Open {
		t.Errorf("pull request = %+v, want crowsnest/main into main at %s", pr, first.CommitSHA)
	}
	if got := webTag(t, c, repo, "main"); got != "1.0.0" {
		t.Errorf("main has web at %s, want 1.0.0: a pull request leaves the base alone", got)
	}
	if got := webTag(t, c, repo, "crowsnest/main"); got != "1.2.0" {
		t.Errorf("the head has web at %s, want 1.2.0", got)
	}

	if p := planPR("1.3.0"); p.Action != "update" || p.Number != pr.Number || p.URL != pr.URL ||
		len(p.Requests) != 1 || p.Requests[0].Method != "PATCH" || !strings.HasSuffix(p.Requests[0].URL, fmt.Sprintf("/pulls/%d", pr.Number)) {
		t.Errorf("planned pull request for a newer tag = %+v, want #%d updated (one PATCH of its title and body)", p, pr.Number)
	}

	again := mustApply(t, w, change("1.2.0"))
	if !again.NoOp || again.PullRequestAction != PullRequestUnchanged || again.PullRequest == nil || again.PullRequest.Number != pr.Number {
		t.Errorf("the same change again = %+v, want nothing done to #%d", again, pr.Number)
	}

	newer := mustApply(t, w, change("1.3.0"))
	if newer.PullRequestAction != PullRequestUpdated || newer.PullRequest.Number != pr.Number || newer.CommitSHA == "" ||
		newer.PullRequest.HeadSHA != newer.CommitSHA {
		t.Errorf("a newer tag = %+v, want #%d updated", newer, pr.Number)
	}
	if !strings.Contains(newer.PullRequest.Title+newer.PullRequest.Body, "1.3.0") {
		t.Errorf("pull request title %q and body %q do not name 1.3.0", newer.PullRequest.Title, newer.PullRequest.Body)
	}
	if got := webTag(t, c, repo, "crowsnest/main"); got != "1.3.0" {
		t.Errorf("the head has web at %s, want 1.3.0", got)
	}
	if open := openPulls(t, c, repo); len(open) != 1 {
		t.Errorf("%d open pull requests, want 1", len(open))
	}

	// Gitea checks a pull request again after each push to its head, in
	// the background: it merges once that check says mergeable.
	testwait.For(t, "Gitea to find the updated pull request mergeable", func() bool {
		p, _, err := c.GetPullRequest(owner, repo.Name, int64(pr.Number))
		return err == nil && p.Mergeable && p.Head != nil && p.Head.Sha == newer.CommitSHA
	})
	if ok, _, err := c.MergePullRequest(owner, repo.Name, int64(pr.Number), gitea.MergePullRequestOption{Style: gitea.MergeStyleSquash}); err != nil || !ok {
		t.Fatalf("merging #%d: %v %v", pr.Number, ok, err)
	}
	next := mustApply(t, w, change("1.4.0"))
	if next.PullRequestAction != PullRequestOpened || next.PullRequest.Number == pr.Number {
		t.Fatalf("after the merge = %+v, want a new pull request", next)
	}
	main, _, err := c.GetRepoBranch(owner, repo.Name, "main")
	if err != nil {
		t.Fatal(err)
	}
	head, _, err := c.GetSingleCommit(owner, repo.Name, next.CommitSHA)
	if err != nil {
		t.Fatal(err)
	}
	if len(head.Parents) != 1 || head.Parents[0].SHA != main.Commit.ID {
		t.Errorf("the new head's parents = %+v, want only main's %s (the head made again from the base)", head.Parents, main.Commit.ID)
	}
	if got := webTag(t, c, repo, "main"); got != "1.3.0" {
		t.Errorf("main has web at %s after the merge, want 1.3.0", got)
	}
}

// A pull-request change names only its base, as argocd-image-updater
// requires, and needs a forge for its repository: otherwise it fails, by
// itself, before anything is pushed.
func TestPullRequestModeRefusals(t *testing.T) {
	s, repoURL := seeded(t, testgit.Options{})
	w := newWriter(t, nil)
	head := s.Head(t, "apps", "main")
	pr := func(branch string) Change {
		ch := kustomizeWeb(repoURL, "1.2.0")
		ch.Branch, ch.PullRequest = branch, &PullRequest{Head: "crowsnest/main"}
		return ch
	}
	tests := []struct {
		name    string
		change  Change
		wantErr error
		want    string
	}{
		{name: "base:target", change: pr("main:updates"), want: "not base:target"},
		{name: "head is the base", change: func() Change { c := pr("main"); c.PullRequest.Head = "main"; return c }(), want: "is the base branch"},
		{name: "no forge", change: pr("main"), wantErr: ErrNoForge},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := w.Apply(t.Context(), []Change{tt.change})
			if err == nil || len(res) != 1 || res[0].Err == nil || res[0].PullRequest != nil {
				t.Fatalf("Apply = %+v, %v; want this change failed", res, err)
			}
			if tt.wantErr != nil && !errors.Is(res[0].Err, tt.wantErr) {
				t.Errorf("error = %v, want %v", res[0].Err, tt.wantErr)
			}
			if !strings.Contains(res[0].Err.Error(), tt.want) {
				t.Errorf("error = %v, want one saying %q", res[0].Err, tt.want)
			}
			if res[0].Attempts > 1 {
				t.Errorf("%d attempts: a refusal is not retried", res[0].Attempts)
			}
		})
	}
	if got := s.Head(t, "apps", "main"); got != head {
		t.Errorf("main moved to %s", got)
	}
}

// A forge's rate limit asking for a longer wait than a retry takes ends
// the write at once (the clone is not held for an hour), with the forge's
// wait in the error for the caller to honour; nothing is pushed before the
// open pull request is known.
func TestPullRequestRateLimitedForge(t *testing.T) {
	s := testgit.Start(t, testgit.Options{})
	repoURL := s.CreateRepo(t, "team/apps")
	s.Seed(t, "team/apps", "main", map[string]string{"web/kustomization.yaml": golden(t, "kustomization-update", "original", "kustomization.yaml")}, "seed")
	var calls atomic.Int32
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		calls.Add(1)
		w.Header().Set("Retry-After", "3600")
		http.Error(w, `{"message":"API rate limit exceeded"}`, http.StatusTooManyRequests)
	}))
	t.Cleanup(api.Close)
	w := newWriter(t, StaticCredentials{Username: "bot", Password: "token"})
	w.Forges = &TokenForges{Resolver: &forge.Resolver{Hosts: map[string]forge.Host{strings.TrimPrefix(s.URL, "http://"): {Kind: forge.KindGitHub, API: api.URL}}}}
	ch := kustomizeWeb(repoURL, "1.2.0")
	ch.PullRequest = &PullRequest{Head: "crowsnest/main"}
	res, err := w.Apply(t.Context(), []Change{ch})
	var rl *forge.RateLimitError
	if err == nil || len(res) != 1 || !errors.As(res[0].Err, &rl) || rl.RetryAfter != time.Hour {
		t.Fatalf("Apply = %+v, %v; want the forge's RateLimitError asking for an hour", res, err)
	}
	if res[0].Attempts != 1 || calls.Load() != 1 {
		t.Errorf("%d attempts, %d forge calls; want 1 and 1: no retry within the write", res[0].Attempts, calls.Load())
	}
	if s.Count(testgit.KindReceivePack) != 0 {
		t.Errorf("pushed before the open pull request was known")
	}
}

// A draft pull request stays a draft when a newer tag updates its title:
// on Gitea a draft is its "WIP: " title prefix, which the update keeps.
func TestPullRequestDraftStaysDraftOnGitea(t *testing.T) {
	g, c, repo, w := giteaRepo(t)
	change := func(tag string) Change {
		ch := kustomizeWeb(g.CloneURL(repo.Name), tag)
		ch.PullRequest = &PullRequest{Head: "crowsnest/main", Draft: true}
		return ch
	}
	first := mustApply(t, w, change("1.2.0"))
	if first.PullRequest == nil || !strings.HasPrefix(first.PullRequest.Title, "WIP: ") {
		t.Fatalf("opened = %+v, want a WIP: draft", first.PullRequest)
	}
	newer := mustApply(t, w, change("1.3.0"))
	p, _, err := c.GetPullRequest(repo.Owner.UserName, repo.Name, int64(first.PullRequest.Number))
	if err != nil {
		t.Fatal(err)
	}
	if newer.PullRequestAction != PullRequestUpdated || !strings.HasPrefix(p.Title, "WIP: ") || !strings.Contains(p.Title, "1.3.0") && !strings.Contains(p.Body, "1.3.0") {
		t.Errorf("after a newer tag: %q / %q (%s), want still a WIP: draft proposing 1.3.0", p.Title, p.Body, newer.PullRequestAction)
	}
}

// A setting the forge's API cannot carry (reviewer names on Azure DevOps)
// is refused before anything is pushed, not after each push.
func TestPullRequestSettingsRefusedBeforeThePush(t *testing.T) {
	s := testgit.Start(t, testgit.Options{})
	repoURL := s.CreateRepo(t, "coll/platform/_git/deploy")
	s.Seed(t, "coll/platform/_git/deploy", "main", map[string]string{"web/kustomization.yaml": golden(t, "kustomization-update", "original", "kustomization.yaml")}, "seed")
	w := newWriter(t, StaticCredentials{Username: "bot", Password: "token"})
	w.Forges = &TokenForges{Resolver: &forge.Resolver{Hosts: map[string]forge.Host{strings.TrimPrefix(s.URL, "http://"): {Kind: forge.KindAzureDevOps}}}}
	ch := kustomizeWeb(repoURL, "1.2.0")
	ch.PullRequest = &PullRequest{Head: "crowsnest/main", Reviewers: []string{"alice"}}
	res, err := w.Apply(t.Context(), []Change{ch})
	if err == nil || len(res) != 1 || !forge.IsPermanent(res[0].Err) || !strings.Contains(res[0].Err.Error(), `reviewer "alice"`) {
		t.Fatalf("Apply = %+v, %v; want the reviewer refused", res, err)
	}
	if n := s.Count(testgit.KindReceivePack); n != 0 {
		t.Errorf("%d pushes before a refused pull request", n)
	}
}

// The body of a pull request on a real Gitea says what merging it changes,
// from the base's values, across updates: a value changed again keeps the
// base's value as From, one set back to the base's leaves the list, one
// the update did not touch stays; what it lists is read back from the
// forge's copy of the body, not kept in the writer.
func TestPullRequestBodyListsWhatMergingChanges(t *testing.T) {
	g, c, repo, _ := giteaRepo(t)
	write := func(tags ...string) *gitea.PullRequest {
		t.Helper()
		ch := kustomizeWeb(g.CloneURL(repo.Name), tags...)
		ch.PullRequest = &PullRequest{Head: "crowsnest/main"}
		ch.Images[0].Revision = "0123456789abcdef0123456789abcdef01234567"
		ch.Images[0].Source = "https://github.com/acme/web"
		// A writer of its own per write: nothing carries over but the
		// forge's pull request.
		w := giteaRepoWriter(t, g)
		res := mustApply(t, w, ch)
		if res.Err != nil || res.PullRequest == nil {
			t.Fatalf("write of %v = %+v, want a pull request", tags, res)
		}
		pr, _, err := c.GetPullRequest(repo.Owner.UserName, repo.Name, int64(res.PullRequest.Number))
		if err != nil {
			t.Fatal(err)
		}
		return pr
	}
	rows := func(pr *gitea.PullRequest) []string {
		var out []string
		for _, l := range strings.Split(pr.Body, "\n") {
			if strings.HasPrefix(l, "| ") && !strings.HasPrefix(l, "| Application") && !strings.HasPrefix(l, "| ---") {
				out = append(out, l)
			}
		}
		return out
	}
	webRow := func(to string) string {
		return "| web | [ghcr.io/acme/web](https://ghcr.io/acme/web) | `1.0.0` | `" + to + "` | [`0123456789ab`](https://github.com/acme/web/commit/0123456789abcdef0123456789abcdef01234567) |"
	}
	apiRow := "| web | [ghcr.io/acme/api](https://ghcr.io/acme/api) | `v2` | `v3` | - |"
	redisRow := "| web | [redis](https://hub.docker.com/_/redis/tags?name=7.2) | `7.0` | `7.2` | - |"

	first := write("1.2.0", "v3")
	if got, want := rows(first), []string{apiRow, webRow("1.2.0")}; !slices.Equal(got, want) {
		t.Errorf("opened: rows\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// web again, api back to the base's v2, redis new.
	second := write("1.3.0", "v2", "7.2")
	if second.Index != first.Index {
		t.Fatalf("second write opened #%d, want #%d updated", second.Index, first.Index)
	}
	if got, want := rows(second), []string{webRow("1.3.0"), redisRow}; !slices.Equal(got, want) {
		t.Errorf("updated: rows\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// Rows by Application, then image. web alone: redis, untouched,
	// stays.
	third := write("1.4.0")
	if got, want := rows(third), []string{webRow("1.4.0"), redisRow}; !slices.Equal(got, want) {
		t.Errorf("updated again: rows\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if !strings.HasPrefix(third.Body, "crowsnest proposes these image updates for `main`:") {
		t.Errorf("body = %q", third.Body)
	}
}
