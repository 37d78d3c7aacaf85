package setup

import (
	"crypto/rsa"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/crowsnest-dev/crowsnest/config"
	"github.com/crowsnest-dev/crowsnest/config/servicetypes"
	"github.com/crowsnest-dev/crowsnest/internal/githubapp/githubapptest"
	"github.com/crowsnest-dev/crowsnest/internal/testgit"
	"github.com/crowsnest-dev/crowsnest/internal/testnotify"
	gitwb "github.com/crowsnest-dev/crowsnest/writeback/git"
)

const (
	testAppID   = 1234
	pushToken   = "pat-of-the-push-credentials"
	headBranch  = "crowsnest/main"
	exchangeFmt = "POST /api/v3/app/installations/%d/access_tokens"
)

// fakeGitHub answers as GitHub's REST API for one repository, team/apps,
// whose branches are on a real Git server: installation tokens for a JWT
// the app's key signed, and the pull requests (list, open, edit) for a
// token it issued or the push credentials' token. It records each request
// with the credential it carried.
type fakeGitHub struct {
	*testnotify.Recorder
	t   *testing.T
	git *testgit.Server
	pub *rsa.PublicKey

	mu     sync.Mutex
	issued map[string]bool
	pulls  []map[string]any
}

func newFakeGitHub(t *testing.T, git *testgit.Server, pub *rsa.PublicKey) *fakeGitHub {
	t.Helper()
	f := &fakeGitHub{t: t, git: git, pub: pub, issued: map[string]bool{}}
	f.Recorder = testnotify.NewRecorder(t, testnotify.RecorderOptions{Answer: f.answer})
	return f
}

func answerJSON(status int, v any) testnotify.Answer {
	b, _ := json.Marshal(v)
	return testnotify.Answer{Status: status, Header: map[string]string{"Content-Type": "application/json"}, Body: string(b)}
}

func (f *fakeGitHub) answer(r testnotify.Request) testnotify.Answer {
	f.mu.Lock()
	defer f.mu.Unlock()
	if strings.HasPrefix(r.Path, "/api/v3/app/installations/") && r.Method == http.MethodPost {
		if err := githubapptest.CheckJWT(f.pub, testAppID, r.Header.Get("Authorization")); err != nil {
			f.t.Errorf("token exchange: %v", err)
			return answerJSON(http.StatusUnauthorized, map[string]string{"message": "A JSON web token could not be decoded"})
		}
		tok := "ghs_" + strconv.Itoa(len(f.issued)+1)
		f.issued[tok] = true
		return answerJSON(http.StatusCreated, map[string]string{"token": tok, "expires_at": time.Now().Add(time.Hour).UTC().Format(time.RFC3339)})
	}
	tok, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !f.issued[tok] && tok != pushToken {
		return answerJSON(http.StatusUnauthorized, map[string]string{"message": "Bad credentials"})
	}
	const pulls = "/api/v3/repos/team/apps/pulls"
	switch {
	case r.Method == http.MethodGet && r.Path == pulls:
		q, _ := url.ParseQuery(r.Query)
		list := []map[string]any{}
		for _, p := range f.pulls {
			if "team:"+p["head"].(map[string]any)["ref"].(string) == q.Get("head") {
				list = append(list, f.view(p))
			}
		}
		return answerJSON(http.StatusOK, list)
	case r.Method == http.MethodPost && r.Path == pulls:
		var in struct{ Title, Head, Base, Body string }
		if json.Unmarshal([]byte(r.Body), &in) != nil || f.git.Head(f.t, "team/apps", in.Head) == "" {
			return answerJSON(http.StatusUnprocessableEntity, map[string]string{"message": "Validation Failed"})
		}
		p := map[string]any{"number": len(f.pulls) + 1, "state": "open", "title": in.Title, "body": in.Body,
			"head": map[string]any{"ref": in.Head}, "base": map[string]any{"ref": in.Base}}
		f.pulls = append(f.pulls, p)
		return answerJSON(http.StatusCreated, f.view(p))
	case r.Method == http.MethodPatch && strings.HasPrefix(r.Path, pulls+"/"):
		n, _ := strconv.Atoi(strings.TrimPrefix(r.Path, pulls+"/"))
		var in struct{ Title, Body string }
		if n < 1 || n > len(f.pulls) || json.Unmarshal([]byte(r.Body), &in) != nil {
			return answerJSON(http.StatusNotFound, map[string]string{"message": "Not Found"})
		}
		f.pulls[n-1]["title"], f.pulls[n-1]["body"] = in.Title, in.Body
		return answerJSON(http.StatusOK, f.view(f.pulls[n-1]))
	}
	return answerJSON(http.StatusNotFound, map[string]string{"message": "Not Found"})
}

// view is p with its head's commit as the Git server has it.
func (f *fakeGitHub) view(p map[string]any) map[string]any {
	v := maps.Clone(p)
	head := p["head"].(map[string]any)["ref"].(string)
	v["head"] = map[string]any{"ref": head, "sha": f.git.Head(f.t, "team/apps", head)}
	v["html_url"] = fmt.Sprintf("https://ghe.example.com/team/apps/pull/%d", p["number"])
	return v
}

// calls are the requests since the from-th as "METHOD path credential",
// a JWT shown as "JWT".
func (f *fakeGitHub) calls(from int) []string {
	var out []string
	for _, r := range f.Requests()[from:] {
		auth := r.Header.Get("Authorization")
		if strings.Count(auth, ".") == 2 {
			auth = "JWT"
		}
		out = append(out, r.Method+" "+r.Path+" "+auth)
	}
	return out
}

// appEnv is a repository served over SSH (and HTTP, which no test here
// uses) by a real Git server, beside a GitHub API on another port of
// 127.0.0.1, and a notifications github service for that API with the
// test app's credentials.
type appEnv struct {
	git     *testgit.Server
	ssh     *testgit.SSHServer
	api     *fakeGitHub
	key     string // the SSH key that pushes
	appKey  string // the app's private key, PEM
	repoURL string
	host    string // the Git host, as git.forges names it (an SSH URL's port is not the web server's: none)
	seed    string // main's commit
}

func newAppEnv(t *testing.T) *appEnv {
	t.Helper()
	git := testgit.Start(t, testgit.Options{})
	git.CreateRepo(t, "team/apps")
	seed := git.Seed(t, "team/apps", "main", map[string]string{"web/kustomization.yaml": "images:\n- name: ghcr.io/acme/web\n  newTag: 1.0.0\n"}, "seed")
	key, pub := testgit.NewSSHKey(t)
	x := git.StartSSH(t, pub)
	appKey, appPEM := githubapptest.Key(t)
	return &appEnv{git: git, ssh: x, api: newFakeGitHub(t, git, &appKey.PublicKey), key: key, appKey: appPEM,
		repoURL: x.RepoURL("team/apps"), host: "127.0.0.1", seed: seed}
}

// config is the env's config: the Git host's forge (GitHub, its API on
// the fake) with forgeYAML's other settings, and the notifications'
// github service of installation 42.
func (e *appEnv) config(t *testing.T, forgeYAML string) *config.Config {
	t.Helper()
	api := e.api.URL + "/api/v3"
	cfg, err := config.Parse(fmt.Appendf(nil, `apiVersion: crowsnest.dev/v1alpha1
kind: Config
git:
  forges:
    %q: {kind: github, api: %s%s}
notifications:
  services:
    github:
      github: {appID: %d, installationID: 42, privateKey: $github-privateKey, enterpriseBaseURL: %s}
`, e.host, api, forgeYAML, testAppID, api))
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// inForce is cfg's notifications as the notifications' setup puts them
// in force: copies of the services, `$key` references resolved from the
// Secret, here holding the app's key.
func (e *appEnv) inForce(t *testing.T, cfg *config.Config) *config.Notifications {
	t.Helper()
	n := cfg.Notifications
	n.Services = map[string]config.Service{}
	for name, s := range cfg.Notifications.Services {
		n.Services[name] = CloneService(s)
	}
	if err := n.ResolveSecrets(map[string][]byte{"github-privateKey": []byte(e.appKey)}); err != nil {
		t.Fatal(err)
	}
	return &n
}

// githubService is the settings of n's service "github".
func githubService(n *config.Notifications) *servicetypes.GitHubSettings {
	s := n.Services["github"]
	return s.Settings().(*servicetypes.GitHubSettings)
}

func (e *appEnv) writer(t *testing.T, cfg *config.Config, creds gitwb.Credentials, apps *NotificationApps) *gitwb.Writer {
	t.Helper()
	creds.SSHPrivateKey, creds.SSHKnownHosts = e.key, e.ssh.KnownHosts()
	w, err := NewGitWriter(cfg, filepath.Join(t.TempDir(), "cache"), gitwb.StaticCredentials(creds), nil, slog.New(slog.NewTextHandler(io.Discard, nil)), apps)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// write proposes web at tag; the result carries its error.
func (e *appEnv) write(t *testing.T, w *gitwb.Writer, tag string) gitwb.Result {
	t.Helper()
	ch := gitwb.Change{App: "web", RepoURL: e.repoURL, Branch: "main", Path: "web", Target: gitwb.Target{Kind: gitwb.TargetKustomization},
		Images: []gitwb.Image{{Name: "ghcr.io/acme/web", NewTag: tag}}, PullRequest: &gitwb.PullRequest{Head: headBranch}}
	res, err := w.Apply(t.Context(), []gitwb.Change{ch})
	if len(res) != 1 || (err != nil) != (res[0].Err != nil) {
		t.Fatalf("Apply = %+v, %v; want one result, with the error if any", res, err)
	}
	return res[0]
}

// checkProposed checks that a write pushed over SSH only and opened or
// updated pull request #1 at its commit.
func (e *appEnv) checkProposed(t *testing.T, res gitwb.Result, action string, pushes int) {
	t.Helper()
	if res.Err != nil || res.PullRequestAction != action || res.PullRequest == nil || res.PullRequest.Number != 1 {
		t.Fatalf("write = %+v, want pull request #1 %s", res, action)
	}
	if got := e.git.Head(t, "team/apps", headBranch); got != res.CommitSHA || res.PullRequest.HeadSHA != got {
		t.Errorf("%s at %s, pull request head %s; want the write's %s", headBranch, got, res.PullRequest.HeadSHA, res.CommitSHA)
	}
	if got := e.git.Head(t, "team/apps", "main"); got != e.seed {
		t.Errorf("main moved to %s", got)
	}
	if n := e.ssh.Count(testgit.KindReceivePack); n != pushes {
		t.Errorf("%d pushes over SSH, want %d", n, pushes)
	}
	if n := e.git.Count(testgit.KindReceivePack) + e.git.Count(testgit.KindUploadPack); n != 0 {
		t.Errorf("%d Git requests over HTTP, want none", n)
	}
}

// A repository pushed to with an SSH key, on a host whose git.forges entry
// lends the notifications' GitHub App: the push goes over SSH with the
// key, and the pull request is found, opened and updated with the app's
// installation token, exchanged once (a JWT signed by the app's key, at
// the service's installation) and kept for the next write. The
// notifications put in force again with another installation (a reload)
// reach the next write.
func TestGitWriterLendsTheNotificationsGitHubApp(t *testing.T) {
	e := newAppEnv(t)
	cfg := e.config(t, ", useNotificationsGitHubApp: true")
	apps := &NotificationApps{}
	apps.Applied(e.inForce(t, cfg))
	w := e.writer(t, cfg, gitwb.Credentials{}, apps)

	first := e.write(t, w, "1.1.0")
	e.checkProposed(t, first, gitwb.PullRequestOpened, 1)
	want := []string{
		fmt.Sprintf(exchangeFmt, 42) + " JWT",
		"GET /api/v3/repos/team/apps/pulls Bearer ghs_1",
		"POST /api/v3/repos/team/apps/pulls Bearer ghs_1",
	}
	if diff := cmp.Diff(want, e.api.calls(0)); diff != "" {
		t.Errorf("API calls of the first write (-want +got):\n%s", diff)
	}

	n := len(e.api.Requests())
	e.checkProposed(t, e.write(t, w, "1.2.0"), gitwb.PullRequestUpdated, 2)
	want = []string{"GET /api/v3/repos/team/apps/pulls Bearer ghs_1", "PATCH /api/v3/repos/team/apps/pulls/1 Bearer ghs_1"}
	if diff := cmp.Diff(want, e.api.calls(n)); diff != "" {
		t.Errorf("API calls of the second write, with the kept token (-want +got):\n%s", diff)
	}

	reloaded := e.inForce(t, cfg)
	githubService(reloaded).InstallationID = "43"
	apps.Applied(reloaded)
	n = len(e.api.Requests())
	e.checkProposed(t, e.write(t, w, "1.3.0"), gitwb.PullRequestUpdated, 3)
	want = []string{fmt.Sprintf(exchangeFmt, 43) + " JWT", "GET /api/v3/repos/team/apps/pulls Bearer ghs_2", "PATCH /api/v3/repos/team/apps/pulls/1 Bearer ghs_2"}
	if diff := cmp.Diff(want, e.api.calls(n)); diff != "" {
		t.Errorf("API calls after the notifications changed installation (-want +got):\n%s", diff)
	}

	// A dry run looks the pull request up as the app and shows the edit
	// it would send, with no token of its own to exchange.
	n = len(e.api.Requests())
	ch := gitwb.Change{App: "web", RepoURL: e.repoURL, Branch: "main", Path: "web", Target: gitwb.Target{Kind: gitwb.TargetKustomization},
		Images: []gitwb.Image{{Name: "ghcr.io/acme/web", NewTag: "1.4.0"}}, PullRequest: &gitwb.PullRequest{Head: headBranch}}
	plans, err := w.Plan(t.Context(), []gitwb.Change{ch})
	if err != nil || len(plans) != 1 || plans[0].PullRequest == nil {
		t.Fatalf("Plan = %+v, %v", plans, err)
	}
	if diff := cmp.Diff([]string{"GET /api/v3/repos/team/apps/pulls Bearer ghs_2"}, e.api.calls(n)); diff != "" {
		t.Errorf("API calls of the dry run (-want +got):\n%s", diff)
	}
	var planned []string
	for _, r := range plans[0].PullRequest.Requests {
		planned = append(planned, r.Method+" "+r.URL+" "+r.Header.Get("Authorization"))
	}
	if diff := cmp.Diff([]string{"PATCH " + e.api.URL + "/api/v3/repos/team/apps/pulls/1 <redacted>"}, planned); diff != "" {
		t.Errorf("planned requests (-want +got):\n%s", diff)
	}
}

// The app is lent only where the operator opts in, and only to
// credentials without a token: without useNotificationsGitHubApp an SSH
// key's pull request fails as before, before anything is pushed or any
// token exchanged; with a token in the credentials the token calls the API
// (the push still over SSH). Where the app cannot be had, the write fails
// naming the setting.
func TestGitWriterLendsTheAppOnlyWhereAsked(t *testing.T) {
	tests := []struct {
		name      string
		forgeYAML string
		creds     gitwb.Credentials
		// none leaves the notifications not in force; edit changes
		// them before.
		none    bool
		edit    func(*config.Notifications)
		wantErr string
		want    []string
	}{
		{
			name: "not opted in", wantErr: "a pull request needs an access token: the repository's credentials have no password (SSH keys cannot call a forge's API)",
		},
		{
			name: "credentials with a token", forgeYAML: ", useNotificationsGitHubApp: true", creds: gitwb.Credentials{Username: "bot", Password: pushToken},
			want: []string{"GET /api/v3/repos/team/apps/pulls Bearer " + pushToken, "POST /api/v3/repos/team/apps/pulls Bearer " + pushToken},
		},
		{
			name: "the service has a token, not an app", forgeYAML: ", useNotificationsGitHubApp: true",
			edit: func(n *config.Notifications) {
				*githubService(n) = servicetypes.GitHubSettings{Token: "ghp_notifications", EnterpriseBaseURL: githubService(n).EnterpriseBaseURL}
			},
			wantErr: "git.forges[127.0.0.1].useNotificationsGitHubApp: no notifications github service with a GitHub App (appID, installationID, privateKey) is for 127.0.0.1",
		},
		{
			name: "two services for the host", forgeYAML: ", useNotificationsGitHubApp: true",
			edit:    func(n *config.Notifications) { n.Services["github2"] = CloneService(n.Services["github"]) },
			wantErr: "git.forges[127.0.0.1].useNotificationsGitHubApp: notifications github services github, github2 all have a GitHub App for 127.0.0.1: leave one",
		},
		{
			name: "not a key", forgeYAML: ", useNotificationsGitHubApp: true",
			edit:    func(n *config.Notifications) { githubService(n).PrivateKey = "not a key" },
			wantErr: "notifications service github: GitHub App: privateKey: not a PEM block",
		},
		{
			name: "notifications not loaded", forgeYAML: ", useNotificationsGitHubApp: true", none: true,
			wantErr: "git.forges[127.0.0.1].useNotificationsGitHubApp: the notifications' services are not loaded",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newAppEnv(t)
			cfg := e.config(t, tt.forgeYAML)
			apps := &NotificationApps{}
			if !tt.none {
				n := e.inForce(t, cfg)
				if tt.edit != nil {
					tt.edit(n)
				}
				apps.Applied(n)
			}
			res := e.write(t, e.writer(t, cfg, tt.creds, apps), "1.1.0")
			if tt.wantErr != "" {
				if res.Err == nil || !strings.Contains(res.Err.Error(), tt.wantErr) {
					t.Fatalf("write error = %v, want %q", res.Err, tt.wantErr)
				}
				if strings.Contains(res.Err.Error(), "BEGIN RSA") {
					t.Errorf("the error shows the app's key: %v", res.Err)
				}
				if got := e.git.Head(t, "team/apps", headBranch); got != "" {
					t.Errorf("%s pushed (%s) by a write that cannot propose it", headBranch, got)
				}
			} else {
				e.checkProposed(t, res, gitwb.PullRequestOpened, 1)
			}
			if diff := cmp.Diff(tt.want, e.api.calls(0)); diff != "" {
				t.Errorf("API calls (-want +got):\n%s", diff)
			}
		})
	}
}
