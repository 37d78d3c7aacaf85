package git

import (
	"errors"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/crowsnest-dev/crowsnest/internal/testgit"
	"github.com/crowsnest-dev/crowsnest/internal/testnotify"
	"github.com/crowsnest-dev/crowsnest/writeback/forge"
)

// The credentials that push, and that the forge's API is called with.
const (
	forgeUser  = "crowsnest-bot"
	forgeToken = "forge-token-1234"
)

// forgeCase is one forge kind end to end: where its host keeps the
// repository and serves its API, how its fake answers, and the requests
// the writer's pull-request mode makes of it, as "METHOD escaped-path"
// ({before} and {after} stand for the head's commit before and after the
// write, abbreviated as Bitbucket Cloud abbreviates them).
type forgeCase struct {
	name string
	// repo is the repository's path on the host, as the forge's clone
	// URLs have it, and suffix what those URLs end with.
	repo, suffix string
	// api is the repository's path in the forge's API, on the same host.
	api     string
	dialect func(*fakeForge, testnotify.Request) testnotify.Answer
	// forges is the writer's Forges for a host at hostURL.
	forges func(hostURL string) Forges
	// header carries the API credential, as auth.
	header, auth string
	// first is a write that opens the pull request, update one that
	// brings it up to date; update's Edit starts at update[editAt].
	first, update []string
	editAt        int
}

// resolved is the Forges crowsnest runs with: TokenForges over a Resolver
// that knows the host's kind, the API derived from the clone URL.
func resolved(kind string) func(string) Forges {
	return func(hostURL string) Forges {
		return &TokenForges{Resolver: &forge.Resolver{Hosts: map[string]forge.Host{strings.TrimPrefix(hostURL, "http://"): {Kind: kind}}}}
	}
}

// bitbucketCloudAt is Forges for a Bitbucket Cloud whose API is at api.
// The Resolver takes only bitbucket.org clone URLs for Bitbucket Cloud,
// whose API is always https://api.bitbucket.org/2.0
// (forge.BitbucketCloudRepo), so neither the repository nor the API can
// be local through TokenForges; this builds the client Resolve builds,
// with the credentials the writer hands over.
type bitbucketCloudAt struct{ api string }

func (b bitbucketCloudAt) Forge(req ForgeRequest) (forge.Forge, forge.Repo, error) {
	return forge.NewBitbucketCloud(req.Creds.Username, req.Creds.Password, forge.Options{}), forge.Repo{API: b.api, Owner: "team", Name: "apps"}, nil
}

func basicAuth(user, password string) string {
	r, _ := http.NewRequest(http.MethodGet, "/", http.NoBody)
	r.SetBasicAuth(user, password)
	return r.Header.Get("Authorization")
}

var forgeCases = []forgeCase{
	{
		name: "github", repo: "team/apps", suffix: ".git", api: "/api/v3/repos/team/apps", dialect: githubAPI,
		forges: resolved(forge.KindGitHub), header: "Authorization", auth: "Bearer " + forgeToken,
		first:  []string{"GET /api/v3/repos/team/apps/pulls", "POST /api/v3/repos/team/apps/pulls"},
		update: []string{"GET /api/v3/repos/team/apps/pulls", "PATCH /api/v3/repos/team/apps/pulls/1"}, editAt: 1,
	},
	{
		name: "gitlab", repo: "team/apps", suffix: ".git", api: "/api/v4/projects/team%2Fapps", dialect: gitlabAPI,
		forges: resolved(forge.KindGitLab), header: "PRIVATE-TOKEN", auth: forgeToken,
		first: []string{"GET /api/v4/projects/team%2Fapps/merge_requests", "POST /api/v4/projects/team%2Fapps/merge_requests"},
		update: []string{"GET /api/v4/projects/team%2Fapps/merge_requests",
			"GET /api/v4/projects/team%2Fapps/merge_requests/1", "PUT /api/v4/projects/team%2Fapps/merge_requests/1"}, editAt: 1,
	},
	{
		name: "bitbucket", repo: "team/apps", suffix: ".git", api: "/2.0/repositories/team/apps", dialect: bitbucketCloudAPI,
		forges: func(hostURL string) Forges { return bitbucketCloudAt{api: hostURL + "/2.0"} }, header: "Authorization", auth: basicAuth(forgeUser, forgeToken),
		first: []string{"GET /2.0/repositories/team/apps/pullrequests", "POST /2.0/repositories/team/apps/pullrequests",
			"GET /2.0/repositories/team/apps/commit/{after}"},
		update: []string{"GET /2.0/repositories/team/apps/pullrequests", "GET /2.0/repositories/team/apps/commit/{before}",
			"GET /2.0/repositories/team/apps/pullrequests/1", "PUT /2.0/repositories/team/apps/pullrequests/1",
			"GET /2.0/repositories/team/apps/commit/{after}"}, editAt: 2,
	},
	{
		name: "bitbucket-server", repo: "scm/TEAM/apps", suffix: ".git", api: "/rest/api/latest/projects/TEAM/repos/apps", dialect: bitbucketServerAPI,
		forges: resolved(forge.KindBitbucketServer), header: "Authorization", auth: basicAuth(forgeUser, forgeToken),
		first: []string{"GET /rest/api/latest/projects/TEAM/repos/apps/pull-requests", "POST /rest/api/latest/projects/TEAM/repos/apps/pull-requests"},
		update: []string{"GET /rest/api/latest/projects/TEAM/repos/apps/pull-requests",
			"GET /rest/api/latest/projects/TEAM/repos/apps/pull-requests/1", "PUT /rest/api/latest/projects/TEAM/repos/apps/pull-requests/1"}, editAt: 1,
	},
	{
		// Azure DevOps Server: Services' dev.azure.com cannot be local,
		// a server's collection on any host can, with the same client.
		name: "azure-devops", repo: "tfs/DefaultCollection/ops/_git/apps", api: "/tfs/DefaultCollection/ops/_apis/git/repositories/apps", dialect: azureAPI,
		forges: resolved(forge.KindAzureDevOps), header: "Authorization", auth: basicAuth("", forgeToken),
		first: []string{"GET /tfs/DefaultCollection/ops/_apis/git/repositories/apps/pullrequests", "POST /tfs/DefaultCollection/ops/_apis/git/repositories/apps/pullrequests"},
		update: []string{"GET /tfs/DefaultCollection/ops/_apis/git/repositories/apps/pullrequests",
			"GET /tfs/DefaultCollection/ops/_apis/git/repositories/apps/pullrequests/1", "PATCH /tfs/DefaultCollection/ops/_apis/git/repositories/apps/pullrequests/1"}, editAt: 2,
	},
}

// forgeHost serves, on one address as a self-hosted forge does, the Git
// repositories of git (through a reverse proxy) and everything else from
// api: the forge's API address is derived from its clone URLs' (GitHub
// Enterprise Server's /api/v3, GitLab's /api/v4, Bitbucket Data Center's
// /rest/api/latest, an Azure DevOps Server collection's _apis).
func forgeHost(t *testing.T, git *testgit.Server, api *testnotify.Recorder) *httptest.Server {
	t.Helper()
	gitURL, err := url.Parse(git.URL)
	if err != nil {
		t.Fatal(err)
	}
	apiURL, err := url.Parse(api.URL)
	if err != nil {
		t.Fatal(err)
	}
	toGit, toAPI := httputil.NewSingleHostReverseProxy(gitURL), httputil.NewSingleHostReverseProxy(apiURL)
	// A connection the Git server drops on purpose (DropPushAcks) is
	// the client's to see, not the log's.
	toGit.ErrorLog = log.New(io.Discard, "", 0)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for _, service := range []string{"/info/refs", "/git-upload-pack", "/git-receive-pack"} {
			if repo, ok := strings.CutSuffix(r.URL.Path, service); ok {
				// testgit keeps REPO.git; Azure DevOps' URLs have no .git.
				if !strings.HasSuffix(repo, ".git") {
					r.URL.Path, r.URL.RawPath = repo+".git"+service, ""
				}
				toGit.ServeHTTP(w, r)
				return
			}
		}
		toAPI.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// forgeEnv is a repository on a forge's host, with main seeded, and a
// writer whose pull requests go to the forge.
type forgeEnv struct {
	fc    forgeCase
	git   *testgit.Server
	forge *fakeForge
	w     *Writer
	url   string // the clone URL
	seed  string // main's commit
}

func newForgeEnv(t *testing.T, fc forgeCase) *forgeEnv {
	t.Helper()
	git := testgit.Start(t, testgit.Options{Password: forgeToken})
	git.CreateRepo(t, fc.repo)
	seed := git.Seed(t, fc.repo, "main", map[string]string{"web/kustomization.yaml": golden(t, "kustomization-update", "original", "kustomization.yaml")}, "seed")
	f := newFakeForge(t, git, fc.repo, fc.api, fc.dialect)
	host := forgeHost(t, git, f.Recorder)
	w := newWriter(t, StaticCredentials{Username: forgeUser, Password: forgeToken})
	w.Forges = fc.forges(host.URL)
	return &forgeEnv{fc: fc, git: git, forge: f, w: w, url: host.URL + "/" + fc.repo + fc.suffix, seed: seed}
}

const prHead = "crowsnest/main"

func (e *forgeEnv) change(tag string) Change {
	ch := kustomizeWeb(e.url, tag)
	ch.PullRequest = &PullRequest{Head: prHead}
	return ch
}

// headSHA is where branch is now.
func (e *forgeEnv) headSHA(t *testing.T, branch string) string {
	t.Helper()
	return e.git.Head(t, e.fc.repo, branch)
}

// want is a write's expected requests, {before} and {after} filled in.
func want(calls []string, before, after string) []string {
	out := make([]string, len(calls))
	for i, c := range calls {
		out[i] = strings.NewReplacer("{before}", before[:min(len(before), 12)], "{after}", after[:min(len(after), 12)]).Replace(c)
	}
	return out
}

// checkCalls compares the forge's requests from the from-th on with want,
// and the credential on each.
func (e *forgeEnv) checkCalls(t *testing.T, from int, want []string) {
	t.Helper()
	if diff := cmp.Diff(want, e.forge.calls()[from:]); diff != "" {
		t.Errorf("requests to the forge (-want +got):\n%s", diff)
	}
	for _, r := range e.forge.Requests() {
		if got := r.Header.Get(e.fc.header); got != e.fc.auth {
			t.Errorf("%s %s: %s = %q, want %q", r.Method, r.EscapedPath, e.fc.header, got, e.fc.auth)
		}
	}
}

// checkHead checks the Git state after a write: main as seeded, the head
// branch carrying web at tag, its commits (newest first) on top of main's.
func (e *forgeEnv) checkHead(t *testing.T, tag string, commits ...string) {
	t.Helper()
	if got := e.headSHA(t, "main"); got != e.seed {
		t.Errorf("main moved to %s: a pull request leaves the base alone", got)
	}
	if got := kustomizationTag(t, e.git, e.fc.repo, prHead); got != tag {
		t.Errorf("%s has web at %q, want %q", prHead, got, tag)
	}
	var shas []string
	for _, c := range e.git.Log(t, e.fc.repo, prHead) {
		shas = append(shas, c.SHA)
	}
	if diff := cmp.Diff(slices.Concat(commits, []string{e.seed}), shas); diff != "" {
		t.Errorf("%s's commits (-want +got):\n%s", prHead, diff)
	}
	if diff := cmp.Diff([]string{prHead, "main"}, e.git.Branches(t, e.fc.repo)); diff != "" {
		t.Errorf("branches (-want +got):\n%s", diff)
	}
}

// kustomizationTag reads web's newTag in the kustomization on branch.
func kustomizationTag(t *testing.T, s *testgit.Server, repo, branch string) string {
	t.Helper()
	b, ok := s.ReadFile(t, repo, branch, "web/kustomization.yaml")
	if !ok {
		return ""
	}
	_, rest, _ := strings.Cut(b, "name: ghcr.io/acme/web")
	_, tag, _ := strings.Cut(rest, "newTag: ")
	tag, _, _ = strings.Cut(tag, " ")
	return strings.Trim(tag, `"'`)
}

// checkProposed checks a write's result: the pull request #1 from the
// head into main, action done to it, at the commit the write pushed,
// proposing web at tag.
func checkProposed(t *testing.T, res Result, action, tag string) {
	t.Helper()
	pr := res.PullRequest
	if res.Err != nil || res.NoOp || res.CommitSHA == "" || res.PullRequestAction != action || pr == nil {
		t.Fatalf("write = %+v; want a commit pushed and the pull request %s", res, action)
	}
	if pr.Number != 1 || pr.Head != prHead || pr.Base != "main" || pr.HeadSHA != res.CommitSHA || pr.State != forge.Open {
		t.Errorf("pull request = %+v, want #1 from %s into main at %s", pr, prHead, res.CommitSHA)
	}
	// From the base's value, even after an update: the body says what
	// merging changes.
	row := "| web | [ghcr.io/acme/web](https://ghcr.io/acme/web) | `1.0.0` | `" + tag + "` | - |"
	if !strings.Contains(pr.Body, row) || pr.Title != "build: automatic update of web" {
		t.Errorf("pull request title %q and body %q, want web's row %s", pr.Title, pr.Body, row)
	}
	if len(res.Updates) != 1 || res.Updates[0].To != tag {
		t.Errorf("updates = %+v, want web to %s", res.Updates, tag)
	}
}

// The writer's pull-request mode against each forge that cannot run here,
// a real Git server beside a recording server that answers as the forge
// does: the first write finds no pull request, pushes the head made from
// main and opens #1; a newer tag finds #1, commits on its head and edits
// its title and body. Each write's requests to the forge, in order, and
// the branches after it are checked.
func TestPullRequestModeOnForges(t *testing.T) {
	for _, fc := range forgeCases {
		t.Run(fc.name, func(t *testing.T) {
			t.Parallel()
			e := newForgeEnv(t, fc)
			first := mustApply(t, e.w, e.change("1.2.0"))
			checkProposed(t, first, PullRequestOpened, "1.2.0")
			e.checkCalls(t, 0, want(fc.first, "", first.CommitSHA))
			e.checkHead(t, "1.2.0", first.CommitSHA)

			n := len(e.forge.Requests())
			newer := mustApply(t, e.w, e.change("1.3.0"))
			checkProposed(t, newer, PullRequestUpdated, "1.3.0")
			e.checkCalls(t, n, want(fc.update, first.CommitSHA, newer.CommitSHA))
			e.checkHead(t, "1.3.0", newer.CommitSHA, first.CommitSHA)
			if got := e.forge.opened(); got != 1 {
				t.Errorf("%d pull requests opened, want 1", got)
			}
		})
	}
}

// A forge's 429 to the look for the open pull request, asking for a wait
// longer than a retry takes, ends the write at once with the forge's
// RateLimitError and its wait; nothing is pushed before the open pull
// request is known.
func TestPullRequestModeOnForgesRateLimited(t *testing.T) {
	for _, fc := range forgeCases {
		t.Run(fc.name, func(t *testing.T) {
			t.Parallel()
			e := newForgeEnv(t, fc)
			e.forge.failNext(1, testnotify.Answer{Status: http.StatusTooManyRequests,
				Header: map[string]string{"Retry-After": "3600", "Content-Type": "application/json"}, Body: `{"message":"API rate limit exceeded"}`})
			res, err := e.w.Apply(t.Context(), []Change{e.change("1.2.0")})
			var rl *forge.RateLimitError
			if err == nil || len(res) != 1 || !errors.As(res[0].Err, &rl) || rl.RetryAfter != time.Hour {
				t.Fatalf("Apply = %+v, %v; want the forge's RateLimitError asking for an hour", res, err)
			}
			if res[0].Attempts != 1 || res[0].PullRequest != nil || res[0].CommitSHA != "" {
				t.Errorf("result = %+v; want one attempt, nothing pushed or proposed", res[0])
			}
			e.checkCalls(t, 0, fc.first[:1])
			if n := e.git.Count(testgit.KindReceivePack); n != 0 {
				t.Errorf("%d pushes before the open pull request was known", n)
			}
			if diff := cmp.Diff([]string{"main"}, e.git.Branches(t, fc.repo)); diff != "" {
				t.Errorf("branches (-want +got):\n%s", diff)
			}
		})
	}
}

// A forge's server error, once, on any of its steps (the look for the
// open pull request, opening it, editing it) is retried within the
// write's attempts: the write succeeds, the commit it pushed once is the
// one it reports and proposes, and there is one pull request. A failed
// open is looked for again before it is made again: a forge may have
// opened it and answered 5xx all the same.
func TestPullRequestModeOnForgesServerError(t *testing.T) {
	faults := []struct {
		name   string
		answer testnotify.Answer
		update bool // the fault is in the second write, which updates #1
		at     func(forgeCase) int
	}{
		{name: "502 finding", answer: testnotify.Answer{Status: http.StatusBadGateway, Body: "<html>502 Bad Gateway</html>"},
			at: func(forgeCase) int { return 0 }},
		{name: "503 opening", answer: testnotify.Answer{Status: http.StatusServiceUnavailable, Header: map[string]string{"Retry-After": "1"}, Body: "Service Unavailable"},
			at: func(forgeCase) int { return 1 }},
		{name: "502 editing", answer: testnotify.Answer{Status: http.StatusBadGateway, Body: "<html>502 Bad Gateway</html>"}, update: true,
			at: func(fc forgeCase) int { return fc.editAt }},
	}
	for _, fc := range forgeCases {
		for _, ft := range faults {
			t.Run(fc.name+"/"+ft.name, func(t *testing.T) {
				t.Parallel()
				e := newForgeEnv(t, fc)
				calls, tag, action, before, commits := fc.first, "1.2.0", PullRequestOpened, "", []string(nil)
				if ft.update {
					first := mustApply(t, e.w, e.change("1.2.0"))
					calls, tag, action, before, commits = fc.update, "1.3.0", PullRequestUpdated, first.CommitSHA, []string{first.CommitSHA}
				}
				n, pushes := len(e.forge.Requests()), len(e.git.Pushes())
				e.forge.failNext(ft.at(fc)+1, ft.answer)
				res := mustApply(t, e.w, e.change(tag))
				checkProposed(t, res, action, tag)
				if res.Attempts != 2 {
					t.Errorf("%d attempts, want 2", res.Attempts)
				}
				// The failed request is made again, and only it; a failed
				// open is looked for first (the forge may have opened it
				// all the same).
				at := ft.at(fc)
				wantCalls := slices.Insert(slices.Clone(calls), at, calls[at])
				if ft.name == "503 opening" {
					wantCalls = slices.Insert(slices.Clone(calls), at+1, calls[0], calls[at])
				}
				e.checkCalls(t, n, want(wantCalls, before, res.CommitSHA))
				e.checkHead(t, tag, append([]string{res.CommitSHA}, commits...)...)
				if got := len(e.git.Pushes()) - pushes; got != 1 {
					t.Errorf("%d pushes, want 1", got)
				}
				if got := e.forge.opened(); got != 1 {
					t.Errorf("%d pull requests opened, want 1", got)
				}
			})
		}
	}
}

// A pull-request write whose push to the open pull request's head landed
// but whose answer was lost finds its commit there at the next attempt,
// and proposes it: the pull request is edited, and the write reports it,
// not a push to a branch.
func TestPullRequestModePushAnswerLost(t *testing.T) {
	e := newForgeEnv(t, forgeCases[0])
	first := mustApply(t, e.w, e.change("1.2.0"))
	n, pushes := len(e.forge.Requests()), e.git.Count(testgit.KindReceivePack)
	e.git.DropPushAcks(1)
	res := mustApply(t, e.w, e.change("1.3.0"))
	checkProposed(t, res, PullRequestUpdated, "1.3.0")
	e.checkCalls(t, n, want(e.fc.update, first.CommitSHA, res.CommitSHA))
	e.checkHead(t, "1.3.0", res.CommitSHA, first.CommitSHA)
	if got := e.git.Count(testgit.KindReceivePack) - pushes; res.Attempts != 2 || got != 1 {
		t.Errorf("%d attempts, %d pushes; want 2 and 1", res.Attempts, got)
	}
}

// A forge that opens the pull request and answers 5xx all the same: the
// retry looks again, finds it, and opens no second one.
func TestPullRequestModeOnForgesOpenedDespite5xx(t *testing.T) {
	for _, fc := range forgeCases {
		t.Run(fc.name, func(t *testing.T) {
			t.Parallel()
			e := newForgeEnv(t, fc)
			e.forge.failNextDone(2, testnotify.Answer{Status: http.StatusBadGateway, Body: "<html>502 Bad Gateway</html>"})
			res := mustApply(t, e.w, e.change("1.2.0"))
			if res.Err != nil || res.PullRequest == nil || res.PullRequest.Number != 1 {
				t.Errorf("result = %+v, want pull request #1", res)
			}
			if got := e.forge.opened(); got != 1 {
				t.Errorf("%d pull requests opened, want 1", got)
			}
		})
	}
}
