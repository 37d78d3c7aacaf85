package forge_test

import (
	"crypto/rand"
	"crypto/rsa"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/crowsnest-dev/crowsnest/internal/githubapp/githubapptest"
	"github.com/crowsnest-dev/crowsnest/internal/rs256"
	"github.com/crowsnest-dev/crowsnest/internal/testnotify"
	"github.com/crowsnest-dev/crowsnest/writeback/forge"
)

const (
	ghAppID        = 1234
	ghInstallation = 42
)

// fakeGitHubApp answers as GitHub for one app installation: an
// installation token for a good JWT, API calls only with a token it
// issued and has not revoked.
type fakeGitHubApp struct {
	pub *rsa.PublicKey

	mu       sync.Mutex
	issued   int
	valid    map[string]bool
	problems []string
}

func (f *fakeGitHubApp) answer(r testnotify.Request) testnotify.Answer {
	f.mu.Lock()
	defer f.mu.Unlock()
	if strings.Contains(r.Path, "/app/installations/") {
		if want := fmt.Sprintf("/api/v3/app/installations/%d/access_tokens", ghInstallation); r.Method != http.MethodPost || r.Path != want {
			f.problems = append(f.problems, "token exchange at "+r.Method+" "+r.Path)
		}
		if err := githubapptest.CheckJWT(f.pub, ghAppID, r.Header.Get("Authorization")); err != nil {
			f.problems = append(f.problems, err.Error())
			return jsonAnswer(http.StatusUnauthorized, `{"message":"A JSON web token could not be decoded"}`)
		}
		f.issued++
		tok := fmt.Sprintf("ghs_installationToken%d", f.issued)
		f.valid[tok] = true
		return jsonAnswer(http.StatusCreated, fmt.Sprintf(`{"token":%q,"expires_at":%q}`, tok, time.Now().Add(time.Hour).UTC().Format(time.RFC3339)))
	}
	if !f.valid[strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")] {
		return jsonAnswer(http.StatusUnauthorized, `{"message":"Bad credentials"}`)
	}
	return githubAPI(nil)(r)
}

func (f *fakeGitHubApp) revoke(tok string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.valid, tok)
}

func (f *fakeGitHubApp) check(t *testing.T) {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, p := range f.problems {
		t.Error(p)
	}
}

// As a GitHub App: one token exchange, with a JWT the app's key signed
// for its ID, serves several calls; a token GitHub revokes is exchanged
// again once.
func TestGitHubAppToken(t *testing.T) {
	key, pemKey := githubapptest.Key(t)
	f := &fakeGitHubApp{pub: &key.PublicKey, valid: map[string]bool{}}
	srv := testnotify.NewRecorder(t, testnotify.RecorderOptions{Answer: f.answer})
	g, err := forge.NewGitHubApp(forge.GitHubApp{API: srv.URL + "/api/v3/", AppID: ghAppID, InstallationID: ghInstallation, PrivateKey: pemKey}, forge.Options{})
	if err != nil {
		t.Fatal(err)
	}
	r := forge.Repo{API: srv.URL + "/api/v3", Owner: "team", Name: "deploy"}
	for range 2 {
		if _, err := g.Get(t.Context(), r, 7); err != nil {
			t.Fatal(err)
		}
	}
	f.revoke("ghs_installationToken1")
	if _, err := g.Find(t.Context(), r, "crowsnest/web-main", "main"); err != nil {
		t.Fatalf("Find after the token was revoked: %v", err)
	}
	f.check(t)
	var got []string
	for _, req := range srv.Requests() {
		got = append(got, req.Method+" "+req.Path+" "+strings.Fields(req.Header.Get("Authorization") + " -")[0])
		if req.Method == http.MethodGet && !strings.HasPrefix(req.Header.Get("Authorization"), "Bearer ghs_installationToken") {
			t.Errorf("%s %s: Authorization %q, want the installation token", req.Method, req.Path, req.Header.Get("Authorization"))
		}
	}
	want := []string{
		"POST /api/v3/app/installations/42/access_tokens Bearer",
		"GET /api/v3/repos/team/deploy/pulls/7 Bearer",
		"GET /api/v3/repos/team/deploy/pulls/7 Bearer",
		"GET /api/v3/repos/team/deploy/pulls Bearer", // refused: token revoked
		"POST /api/v3/app/installations/42/access_tokens Bearer",
		"GET /api/v3/repos/team/deploy/pulls Bearer",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("requests (-want +got):\n%s", diff)
	}
}

// An app GitHub will not issue a token for fails permanently, and no
// error shows the JWT or the key.
func TestGitHubAppRefused(t *testing.T) {
	_, pemKey := githubapptest.Key(t)
	other, err := rsa.GenerateKey(rand.Reader, 2048) // a key the app does not have
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeGitHubApp{pub: &other.PublicKey, valid: map[string]bool{}}
	srv := testnotify.NewRecorder(t, testnotify.RecorderOptions{Answer: f.answer})
	g, err := forge.NewGitHubApp(forge.GitHubApp{API: srv.URL + "/api/v3", AppID: ghAppID, InstallationID: ghInstallation, PrivateKey: pemKey}, forge.Options{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = g.Get(t.Context(), forge.Repo{API: srv.URL + "/api/v3", Owner: "team", Name: "deploy"}, 7)
	if err == nil || !forge.IsPermanent(err) {
		t.Fatalf("Get = %v, want a permanent error", err)
	}
	jwt := strings.TrimPrefix(srv.Requests()[0].Header.Get("Authorization"), "Bearer ")
	if strings.Contains(err.Error(), jwt) || strings.Contains(err.Error(), "PRIVATE KEY") {
		t.Errorf("error shows a credential: %v", err)
	}
	if n := len(srv.Requests()); n != 1 {
		t.Errorf("%d requests, want the one refused exchange", n)
	}
	if _, err := forge.NewGitHubApp(forge.GitHubApp{AppID: ghAppID, InstallationID: ghInstallation, PrivateKey: "not a key"}, forge.Options{}); err == nil || strings.Contains(err.Error(), "not a key") {
		t.Errorf("NewGitHubApp with a bad key = %v, want an error that does not quote it", err)
	}
}

// The token exchange is the request go-github sends for it
// (Apps.CreateInstallationToken with the app's JWT, the body JSON null),
// and the installation token is then sent as go-github sends a token.
// The JWTs differ in their signing second; both are checked against the
// app's key and then compared as "the app's JWT".
func TestGitHubAppConformance(t *testing.T) {
	key, pemKey := githubapptest.Key(t)
	ours, theirs := recordBoth(t, githubAPI(nil), func(rec *testnotify.Recorder) error {
		g, err := forge.NewGitHubApp(forge.GitHubApp{API: rec.URL + "/api/v3", AppID: ghAppID, InstallationID: ghInstallation, PrivateKey: pemKey}, forge.Options{})
		if err != nil {
			return err
		}
		_, err = g.Get(t.Context(), forge.Repo{API: rec.URL + "/api/v3", Owner: "team", Name: "deploy"}, 7)
		return err
	}, func(rec *testnotify.Recorder) error {
		iat := time.Now().Add(-30 * time.Second).Unix()
		jwt, err := rs256.SignJWT(key, map[string]string{"alg": "RS256", "typ": "JWT"}, map[string]any{"iss": fmt.Sprint(ghAppID), "iat": iat, "exp": iat + 120})
		if err != nil {
			return err
		}
		tok, _, err := ghClient(t, rec, jwt).Apps.CreateInstallationToken(t.Context(), ghInstallation, nil)
		if err != nil {
			return err
		}
		_, _, err = ghClient(t, rec, tok.GetToken()).PullRequests.Get(t.Context(), "team", "deploy", 7)
		return err
	})
	normalize := func(reqs []testnotify.Request) []wireCall {
		calls := wireCalls(t, reqs, "/api/v3", ghWireHeaders...)
		for i, c := range calls {
			if strings.HasSuffix(c.Path, "/access_tokens") {
				if err := githubapptest.CheckJWT(&key.PublicKey, ghAppID, c.Header["Authorization"]); err != nil {
					t.Error(err)
				}
				calls[i].Header["Authorization"] = "Bearer <the app's JWT>"
			}
		}
		return calls
	}
	if diff := cmp.Diff(normalize(theirs), normalize(ours)); diff != "" {
		t.Errorf("crowsnest's requests differ from go-github's (-go-github +crowsnest):\n%s", diff)
	}
}
