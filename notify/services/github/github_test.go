package github_test

import (
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/crowsnest-dev/crowsnest/config"
	"github.com/crowsnest-dev/crowsnest/notify"
	"github.com/crowsnest-dev/crowsnest/notify/outbox"
	"github.com/crowsnest-dev/crowsnest/notify/services"
	"github.com/crowsnest-dev/crowsnest/notify/services/internal/svctest"
)

const (
	ghAppID        = 1234
	ghInstallation = 42
	// ghDeployed is the commit Argo CD deployed (the sync result); the
	// Application's status.sync.revision is another, newer one.
	ghDeployed = "0123456789abcdef0123456789abcdef01234567"
	ghNewer    = "fedcba9876543210fedcba9876543210fedcba98"
)

var (
	ghKeyOnce sync.Once
	ghKey     *rsa.PrivateKey
	ghKeyPEM  string
)

// githubKey is the test GitHub App's key (2048 bits, as GitHub issues).
func githubKey(t *testing.T) (*rsa.PrivateKey, string) {
	t.Helper()
	ghKeyOnce.Do(func() {
		k, err := rsa.GenerateKey(rand.Reader, 2048)
		if err != nil {
			panic(err)
		}
		ghKey = k
		ghKeyPEM = string(pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(k)}))
	})
	return ghKey, ghKeyPEM
}

// fakeGitHub answers as GitHub's REST API does for one app installation:
// it checks the app's JWT (signature with the key's public half, iss,
// iat, exp) before it issues an installation token, and refuses API
// calls without a token it issued (401).
type fakeGitHub struct {
	pub *rsa.PublicKey
	// ttl is the lifetime of issued tokens (an hour when zero).
	ttl time.Duration
	// api answers an authorized API call (201 "{}" when nil or when it
	// returns a zero answer).
	api func(r svctest.Received) svctest.Answer

	mu        sync.Mutex
	issued    []string
	valid     map[string]bool
	problems  []string
	jwtClaims []map[string]any
}

func newFakeGitHub(t *testing.T, api func(svctest.Received) svctest.Answer) *fakeGitHub {
	t.Helper()
	k, _ := githubKey(t)
	return &fakeGitHub{pub: &k.PublicKey, api: api, valid: map[string]bool{}}
}

func (f *fakeGitHub) route(r svctest.Received) svctest.Answer {
	f.mu.Lock()
	defer f.mu.Unlock()
	if strings.HasSuffix(r.Path, "/app/installations/") || strings.Contains(r.Path, "/app/installations/") {
		if r.Method != http.MethodPost || !strings.HasSuffix(r.Path, fmt.Sprintf("/app/installations/%d/access_tokens", ghInstallation)) {
			return svctest.Answer{Status: http.StatusNotFound, Body: `{"message":"Not Found"}`}
		}
		if err := f.checkJWT(r.Header.Get("Authorization")); err != nil {
			f.problems = append(f.problems, err.Error())
			return svctest.Answer{Status: http.StatusUnauthorized, Body: `{"message":"A JSON web token could not be decoded"}`}
		}
		tok := ghToken(len(f.issued) + 1)
		f.issued = append(f.issued, tok)
		f.valid[tok] = true
		ttl := f.ttl
		if ttl == 0 {
			ttl = time.Hour
		}
		return svctest.Answer{Status: http.StatusCreated, Body: fmt.Sprintf(`{"token":%q,"expires_at":%q,"permissions":{"statuses":"write"}}`,
			tok, time.Now().Add(ttl).UTC().Format(time.RFC3339))}
	}
	auth := r.Header.Get("Authorization")
	if !strings.HasPrefix(auth, "token ") || !f.valid[strings.TrimPrefix(auth, "token ")] {
		return svctest.Answer{Status: http.StatusUnauthorized, Body: `{"message":"Bad credentials"}`}
	}
	if f.api != nil {
		if a := f.api(r); a.Status != 0 {
			return a
		}
	}
	return svctest.Answer{Status: http.StatusCreated, Body: "{}"}
}

// checkJWT verifies an app JWT as GitHub does.
func (f *fakeGitHub) checkJWT(h string) error {
	jwt, ok := strings.CutPrefix(h, "Bearer ")
	if !ok {
		return fmt.Errorf("token exchange without a Bearer JWT: %q", h)
	}
	parts := strings.Split(jwt, ".")
	if len(parts) != 3 {
		return errors.New("JWT has not three parts")
	}
	enc := base64.RawURLEncoding
	var header struct{ Alg, Typ string }
	hb, err := enc.DecodeString(parts[0])
	if err != nil || json.Unmarshal(hb, &header) != nil || header.Alg != "RS256" {
		return fmt.Errorf("JWT header %s: want alg RS256", hb)
	}
	sig, err := enc.DecodeString(parts[2])
	if err != nil {
		return errors.New("JWT signature is not base64url")
	}
	sum := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
	if err := rsa.VerifyPKCS1v15(f.pub, crypto.SHA256, sum[:], sig); err != nil {
		return fmt.Errorf("JWT signature: %w", err)
	}
	cb, err := enc.DecodeString(parts[1])
	if err != nil {
		return errors.New("JWT claims are not base64url")
	}
	var claims map[string]any
	if err := json.Unmarshal(cb, &claims); err != nil {
		return fmt.Errorf("JWT claims %s: %w", cb, err)
	}
	f.jwtClaims = append(f.jwtClaims, claims)
	iat, _ := claims["iat"].(float64)
	exp, _ := claims["exp"].(float64)
	now := float64(time.Now().Unix())
	switch {
	case claims["iss"] != fmt.Sprint(ghAppID):
		return fmt.Errorf("JWT iss %v, want %q", claims["iss"], fmt.Sprint(ghAppID))
	case iat == 0 || iat > now+1:
		return fmt.Errorf("JWT iat %v is missing or in the future (now %v)", iat, now)
	case exp <= now || exp-iat > 600:
		return fmt.Errorf("JWT exp %v: expired or more than 10 minutes after iat %v", exp, iat)
	}
	return nil
}

// ghToken is the n-th installation token the fake issues, in the shape
// of GitHub Enterprise's older tokens (v1.<40 hex>), which the outbox's
// redaction does not know: the sender has to keep it out of errors.
func ghToken(n int) string { return fmt.Sprintf("v1.%040d", n) }

// revoke makes GitHub refuse every token issued so far.
func (f *fakeGitHub) revoke() {
	f.mu.Lock()
	defer f.mu.Unlock()
	clear(f.valid)
}

func (f *fakeGitHub) exchanges() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.issued)
}

func (f *fakeGitHub) check(t *testing.T) {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, p := range f.problems {
		t.Errorf("GitHub refused the app's JWT: %s", p)
	}
}

// newGitHubSink is a sink that speaks as f.
func newGitHubSink(t *testing.T, f *fakeGitHub) *svctest.Sink {
	t.Helper()
	s := svctest.NewSink(t, false)
	s.Route = f.route
	return s
}

// githubCM is an argocd-notifications-cm with the GitHub service as
// Argo CD's docs configure it (the IDs as YAML numbers) and template.
func githubCM(base, tmpl string) map[string]string {
	return map[string]string{
		"service.github": fmt.Sprintf("appID: %d\ninstallationID: %d\nprivateKey: $github-privateKey\nenterpriseBaseURL: %s\n",
			ghAppID, ghInstallation, base),
		"template.app-deployed": tmpl,
	}
}

func githubSecret(t *testing.T) map[string][]byte {
	t.Helper()
	_, pemKey := githubKey(t)
	return map[string][]byte{"github-privateKey": []byte(pemKey)}
}

const githubStatusTemplate = `message: Application {{.app.metadata.name}} is now running a new version.
github:
  status:
    state: success
    label: "continuous-delivery/{{.app.metadata.name}}"
    targetURL: "https://argocd.example.com/applications/{{.app.metadata.name}}?operation=true"
`

// githubApp is an Application whose deployed revision (the sync
// result) differs from the newest one it saw (status.sync.revision).
func githubApp(name string) map[string]any {
	app := svctest.App(name)
	app["spec"] = map[string]any{"source": map[string]any{
		"repoURL": "git@github.com:example/" + name + ".git", "targetRevision": "main",
	}}
	st := app["status"].(map[string]any)
	st["sync"] = map[string]any{"status": "OutOfSync", "revision": ghNewer}
	return app
}

func TestGitHubAppCommitStatusThroughOutbox(t *testing.T) {
	f := newFakeGitHub(t, func(r svctest.Received) svctest.Answer {
		if r.Method == http.MethodPost && strings.Contains(r.Path, "/statuses/") {
			return svctest.Answer{Status: http.StatusCreated, Body: `{"id": 901, "state": "success"}`}
		}
		return svctest.Answer{}
	})
	s := newGitHubSink(t, f)
	rec := svctest.Deliver(t, svctest.Delivery{
		CM: githubCM(s.URL, githubStatusTemplate), Secret: githubSecret(t),
		Service: "github", Template: "app-deployed", App: githubApp("guestbook"),
	})
	f.check(t)
	if rec.State != outbox.StateDelivered || rec.Receipt.ID != "status 901" {
		t.Fatalf("record: state %s receipt %+v error %q", rec.State, rec.Receipt, rec.LastError)
	}
	reqs := s.Requests()
	if len(reqs) != 2 {
		t.Fatalf("got %d requests, want the token exchange and the status: %+v", len(reqs), reqs)
	}
	if ex := reqs[0]; ex.Method != http.MethodPost || ex.Path != fmt.Sprintf("/api/v3/app/installations/%d/access_tokens", ghInstallation) {
		t.Errorf("first request %s %s, want the installation token exchange", ex.Method, ex.Path)
	}
	r := reqs[1]
	if want := "/api/v3/repos/example/guestbook/statuses/" + ghDeployed; r.Method != http.MethodPost || r.Path != want {
		t.Errorf("status request %s %s, want POST %s (the deployed revision)", r.Method, r.Path, want)
	}
	if got := r.Header.Get("Authorization"); got != "token "+ghToken(1) {
		t.Errorf("Authorization = %q, want the installation token", got)
	}
	var body map[string]string
	if err := json.Unmarshal([]byte(r.Body), &body); err != nil {
		t.Fatalf("body %s: %v", r.Body, err)
	}
	want := map[string]string{
		"state": "success", "context": "continuous-delivery/guestbook",
		"target_url":  "https://argocd.example.com/applications/guestbook?operation=true",
		"description": "Application guestbook is now running a new version.",
	}
	if d := cmp.Diff(want, body); d != "" {
		t.Errorf("status body (-want +got):\n%s", d)
	}
}

func TestGitHubInstallationToken(t *testing.T) {
	apps := []map[string]any{githubApp("guestbook"), githubApp("billing"), githubApp("frontend")}
	t.Run("one exchange serves several sends", func(t *testing.T) {
		f := newFakeGitHub(t, nil)
		s := newGitHubSink(t, f)
		recs := svctest.DeliverEach(t, svctest.Delivery{CM: githubCM(s.URL+"/api/v3", githubStatusTemplate), Secret: githubSecret(t), Service: "github", Template: "app-deployed"}, apps...)
		f.check(t)
		for _, rec := range recs {
			if rec.State != outbox.StateDelivered {
				t.Fatalf("state %s: %s", rec.State, rec.LastError)
			}
		}
		if n := f.exchanges(); n != 1 {
			t.Errorf("%d token exchanges for 3 sends, want 1", n)
		}
		var paths []string
		for _, r := range s.Requests()[1:] {
			paths = append(paths, r.Path)
			if r.Header.Get("Authorization") != "token "+ghToken(1) {
				t.Errorf("%s: Authorization %q", r.Path, r.Header.Get("Authorization"))
			}
		}
		want := []string{
			"/api/v3/repos/example/guestbook/statuses/" + ghDeployed,
			"/api/v3/repos/example/billing/statuses/" + ghDeployed,
			"/api/v3/repos/example/frontend/statuses/" + ghDeployed,
		}
		if d := cmp.Diff(want, paths); d != "" {
			t.Errorf("API requests (-want +got):\n%s", d)
		}
	})
	t.Run("a token about to expire is renewed", func(t *testing.T) {
		f := newFakeGitHub(t, nil)
		f.ttl = 30 * time.Second // inside the renewal margin: every send needs a new one
		s := newGitHubSink(t, f)
		recs := svctest.DeliverEach(t, svctest.Delivery{CM: githubCM(s.URL, githubStatusTemplate), Secret: githubSecret(t), Service: "github", Template: "app-deployed"}, apps[:2]...)
		f.check(t)
		if recs[1].State != outbox.StateDelivered || f.exchanges() != 2 {
			t.Fatalf("state %s after %d exchanges, want delivered after 2: %s", recs[1].State, f.exchanges(), recs[1].LastError)
		}
		if got := s.Requests()[3].Header.Get("Authorization"); got != "token "+ghToken(2) {
			t.Errorf("second send's Authorization = %q, want the renewed token", got)
		}
	})
	t.Run("a revoked token is renewed once on 401", func(t *testing.T) {
		f := newFakeGitHub(t, nil)
		s := newGitHubSink(t, f)
		d := svctest.Delivery{CM: githubCM(s.URL, githubStatusTemplate), Secret: githubSecret(t), Service: "github", Template: "app-deployed", MaxAttempts: 1}
		nc, err := config.ParseArgoCDConfigMap(d.CM, d.Secret)
		if err != nil {
			t.Fatal(err)
		}
		kind, _ := services.Lookup("github")
		svc, err := kind.New("github", nc.Services["github"].Ext.Settings, services.Options{})
		if err != nil {
			t.Fatal(err)
		}
		d.App = apps[0]
		n := svctest.Render(t, nc, d)
		if _, err := svc.Send(t.Context(), n, notify.Destination{Service: "github"}); err != nil {
			t.Fatalf("first send: %v", err)
		}
		f.revoke()
		r, err := svc.Send(t.Context(), n, notify.Destination{Service: "github"})
		if err != nil || f.exchanges() != 2 {
			t.Fatalf("send after revocation: receipt %+v, %d exchanges, err %v", r, f.exchanges(), err)
		}
		f.check(t)
		// Refused again with a fresh token: the answer stands (a
		// permanent failure, one renewal only).
		f.api = func(svctest.Received) svctest.Answer {
			return svctest.Answer{Status: http.StatusUnauthorized, Body: `{"message":"Bad credentials"}`}
		}
		_, err = svc.Send(t.Context(), n, notify.Destination{Service: "github"})
		if !notify.IsPermanent(err) || f.exchanges() != 3 {
			t.Fatalf("after a second 401: %d exchanges, err %v, want 3 and a permanent error", f.exchanges(), err)
		}
	})
	t.Run("a refused JWT is dead-lettered without the key or the JWT", func(t *testing.T) {
		f := newFakeGitHub(t, nil)
		other, err := rsa.GenerateKey(rand.Reader, 2048)
		if err != nil {
			t.Fatal(err)
		}
		f.pub = &other.PublicKey // GitHub holds another key than the one configured
		s := newGitHubSink(t, f)
		rec := svctest.Deliver(t, svctest.Delivery{CM: githubCM(s.URL, githubStatusTemplate), Secret: githubSecret(t), Service: "github", Template: "app-deployed", App: apps[0]})
		if rec.State != outbox.StateDead || rec.Attempts != 1 || len(s.Requests()) != 1 {
			t.Fatalf("state %s attempts %d requests %d: %s", rec.State, rec.Attempts, len(s.Requests()), rec.LastError)
		}
		svctest.MustContain(t, "last error", rec.LastError, "installation token", "401")
		jwt := strings.TrimPrefix(s.Requests()[0].Header.Get("Authorization"), "Bearer ")
		_, pemKey := githubKey(t)
		keyLine := strings.Split(pemKey, "\n")[1]
		svctest.MustNotContain(t, "last error", rec.LastError, jwt, strings.Split(jwt, ".")[2], keyLine)
	})
}

func TestGitHubDeployment(t *testing.T) {
	tmpl := `message: "{{.app.metadata.name}} deployed"
github:
  deployment:
    state: success
    environment: production
    environmentURL: "https://{{.app.metadata.name}}.example.com"
    logURL: "https://argocd.example.com/applications/{{.app.metadata.name}}?operation=true"
    requiredContexts: []
`
	api := func(existing string) func(r svctest.Received) svctest.Answer {
		return func(r svctest.Received) svctest.Answer {
			switch {
			case r.Method == http.MethodGet && r.Path == "/api/v3/repos/example/guestbook/deployments":
				return svctest.Answer{Status: http.StatusOK, Body: existing}
			case r.Method == http.MethodPost && r.Path == "/api/v3/repos/example/guestbook/deployments":
				return svctest.Answer{Status: http.StatusCreated, Body: `{"id": 77, "ref": "` + ghDeployed + `"}`}
			case r.Method == http.MethodPost && strings.HasSuffix(r.Path, "/statuses"):
				return svctest.Answer{Status: http.StatusCreated, Body: `{"id": 88}`}
			}
			return svctest.Answer{Status: http.StatusNotFound, Body: `{"message":"Not Found"}`}
		}
	}
	t.Run("created then its status", func(t *testing.T) {
		f := newFakeGitHub(t, api(`[]`))
		s := newGitHubSink(t, f)
		rec := svctest.Deliver(t, svctest.Delivery{CM: githubCM(s.URL, tmpl), Secret: githubSecret(t), Service: "github", Template: "app-deployed", App: githubApp("guestbook")})
		f.check(t)
		if rec.State != outbox.StateDelivered || rec.Receipt.ID != "deployment 77 status 88" {
			t.Fatalf("state %s receipt %+v: %s", rec.State, rec.Receipt, rec.LastError)
		}
		reqs := s.Requests()[1:]
		if len(reqs) != 3 {
			t.Fatalf("got %d API requests, want list, create, status: %+v", len(reqs), reqs)
		}
		if reqs[0].Query != "environment=production&ref="+ghDeployed {
			t.Errorf("list query %q", reqs[0].Query)
		}
		var created map[string]any
		if err := json.Unmarshal([]byte(reqs[1].Body), &created); err != nil {
			t.Fatal(err)
		}
		wantCreated := map[string]any{"ref": ghDeployed, "environment": "production", "required_contexts": []any{},
			"auto_merge": true, "transient_environment": false}
		if d := cmp.Diff(wantCreated, created); d != "" {
			t.Errorf("deployment (-want +got):\n%s", d)
		}
		if reqs[2].Path != "/api/v3/repos/example/guestbook/deployments/77/statuses" {
			t.Errorf("status path %s", reqs[2].Path)
		}
		var st map[string]any
		if err := json.Unmarshal([]byte(reqs[2].Body), &st); err != nil {
			t.Fatal(err)
		}
		wantStatus := map[string]any{"state": "success", "environment": "production", "environment_url": "https://guestbook.example.com",
			"log_url": "https://argocd.example.com/applications/guestbook?operation=true", "description": "guestbook deployed"}
		if d := cmp.Diff(wantStatus, st); d != "" {
			t.Errorf("deployment status (-want +got):\n%s", d)
		}
	})
	t.Run("an existing deployment gets the status", func(t *testing.T) {
		f := newFakeGitHub(t, api(`[{"id": 55, "environment": "production"}]`))
		s := newGitHubSink(t, f)
		rec := svctest.Deliver(t, svctest.Delivery{CM: githubCM(s.URL, tmpl), Secret: githubSecret(t), Service: "github", Template: "app-deployed", App: githubApp("guestbook")})
		reqs := s.Requests()[1:]
		if rec.State != outbox.StateDelivered || len(reqs) != 2 || reqs[1].Path != "/api/v3/repos/example/guestbook/deployments/55/statuses" {
			t.Fatalf("state %s (%s), requests %+v", rec.State, rec.LastError, reqs)
		}
	})
}

func TestGitHubPullRequestComment(t *testing.T) {
	const tag = "<!-- argocd-notifications deploy-guestbook -->"
	tmpl := `message: unused
github:
  pullRequestComment:
    content: "Deployed {{.app.metadata.name}} at {{.app.status.operationState.syncResult.revision | trunc 7}}"
    commentTag: deploy-guestbook
`
	f := newFakeGitHub(t, func(r svctest.Received) svctest.Answer {
		p := strings.TrimPrefix(r.Path, "/api/v3/repos/example/guestbook/")
		switch {
		case r.Method == http.MethodGet && p == "commits/"+ghDeployed+"/pulls":
			return svctest.Answer{Status: http.StatusOK, Body: `[{"number": 5}, {"number": 6}]`}
		case r.Method == http.MethodGet && p == "issues/5/comments":
			return svctest.Answer{Status: http.StatusOK, Body: `[{"id": 100, "body": "LGTM"}, {"id": 101, "body": "Deployed guestbook at 1111111\n` + tag + `"}]`}
		case r.Method == http.MethodGet && p == "issues/6/comments":
			return svctest.Answer{Status: http.StatusOK, Body: `[{"id": 200, "body": "LGTM"}]`}
		case r.Method == http.MethodPatch && p == "issues/comments/101":
			return svctest.Answer{Status: http.StatusOK, Body: `{"id": 101}`}
		case r.Method == http.MethodPost && p == "issues/6/comments":
			return svctest.Answer{Status: http.StatusCreated, Body: `{"id": 201}`}
		}
		return svctest.Answer{Status: http.StatusNotFound, Body: `{"message":"Not Found"}`}
	})
	s := newGitHubSink(t, f)
	rec := svctest.Deliver(t, svctest.Delivery{CM: githubCM(s.URL, tmpl), Secret: githubSecret(t), Service: "github", Template: "app-deployed", App: githubApp("guestbook")})
	f.check(t)
	if rec.State != outbox.StateDelivered || rec.Receipt.ID != "comment 101 on #5 updated, comment 201 on #6" {
		t.Fatalf("state %s receipt %+v: %s", rec.State, rec.Receipt, rec.LastError)
	}
	// Argo CD's body: the content, its tag from the templater and the
	// tag again from the sender.
	wantBody := "Deployed guestbook at 0123456\n" + tag + "\n" + tag
	var got []string
	for _, r := range s.Requests()[1:] {
		if r.Method == http.MethodGet {
			continue
		}
		var b map[string]string
		if err := json.Unmarshal([]byte(r.Body), &b); err != nil {
			t.Fatal(err)
		}
		got = append(got, r.Method+" "+r.Path)
		if b["body"] != wantBody {
			t.Errorf("%s %s body %q, want %q", r.Method, r.Path, b["body"], wantBody)
		}
	}
	want := []string{"PATCH /api/v3/repos/example/guestbook/issues/comments/101", "POST /api/v3/repos/example/guestbook/issues/6/comments"}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("writes (-want +got):\n%s", d)
	}
}

func TestGitHubCheckRunAndDispatch(t *testing.T) {
	tmpl := `message: unused
github:
  checkRun:
    name: "argocd/{{.app.metadata.name}}"
    details_url: "https://argocd.example.com/applications/{{.app.metadata.name}}"
    conclusion: success
    completed_at: "2026-11-26T10:00:00Z"
    output:
      title: Deployed
      summary: "{{.app.metadata.name}} is {{.app.status.health.status}}"
  repositoryDispatch:
    event_type: argocd-deployed
    client_payload: '{"app": "{{.app.metadata.name}}", "revision": "{{.app.status.operationState.syncResult.revision}}"}'
`
	f := newFakeGitHub(t, func(r svctest.Received) svctest.Answer {
		switch r.Path {
		case "/api/v3/repos/example/guestbook/check-runs":
			return svctest.Answer{Status: http.StatusCreated, Body: `{"id": 3}`}
		case "/api/v3/repos/example/guestbook/dispatches":
			return svctest.Answer{Status: http.StatusNoContent}
		}
		return svctest.Answer{Status: http.StatusNotFound, Body: `{"message":"Not Found"}`}
	})
	s := newGitHubSink(t, f)
	rec := svctest.Deliver(t, svctest.Delivery{CM: githubCM(s.URL, tmpl), Secret: githubSecret(t), Service: "github", Template: "app-deployed", App: githubApp("guestbook")})
	if rec.State != outbox.StateDelivered || rec.Receipt.ID != "check run 3; dispatch argocd-deployed" {
		t.Fatalf("state %s receipt %+v: %s", rec.State, rec.Receipt, rec.LastError)
	}
	reqs := s.Requests()[1:]
	var check, dispatch map[string]any
	if err := errors.Join(json.Unmarshal([]byte(reqs[0].Body), &check), json.Unmarshal([]byte(reqs[1].Body), &dispatch)); err != nil {
		t.Fatal(err)
	}
	wantCheck := map[string]any{
		"name": "argocd/guestbook", "head_sha": ghDeployed, "external_id": "argocd-notifications",
		"details_url": "https://argocd.example.com/applications/guestbook", "status": "completed", "conclusion": "success",
		"completed_at": "2026-11-26T10:00:00Z",
		"output":       map[string]any{"title": "Deployed", "summary": "guestbook is Healthy", "text": ""},
	}
	if d := cmp.Diff(wantCheck, check); d != "" {
		t.Errorf("check run (-want +got):\n%s", d)
	}
	wantDispatch := map[string]any{"event_type": "argocd-deployed", "client_payload": map[string]any{"app": "guestbook", "revision": ghDeployed}}
	if d := cmp.Diff(wantDispatch, dispatch); d != "" {
		t.Errorf("dispatch (-want +got):\n%s", d)
	}
}

func TestGitHubMultiSourceApplication(t *testing.T) {
	f := newFakeGitHub(t, nil)
	s := newGitHubSink(t, f)
	app := githubApp("guestbook")
	app["spec"] = map[string]any{"sources": []any{
		map[string]any{"repoURL": "https://github.com/example/manifests.git", "targetRevision": "main"},
		map[string]any{"repoURL": "https://charts.example.com", "chart": "guestbook", "targetRevision": "1.2.3"},
	}}
	op := app["status"].(map[string]any)["operationState"].(map[string]any)
	op["syncResult"] = map[string]any{"revisions": []any{ghDeployed, "1.2.3"}}
	rec := svctest.Deliver(t, svctest.Delivery{CM: githubCM(s.URL, githubStatusTemplate), Secret: githubSecret(t), Service: "github", Template: "app-deployed", App: app})
	reqs := s.Requests()
	if rec.State != outbox.StateDelivered || len(reqs) != 2 || reqs[1].Path != "/api/v3/repos/example/manifests/statuses/"+ghDeployed {
		t.Fatalf("state %s (%s), requests %+v", rec.State, rec.LastError, reqs)
	}
}

func TestGitHubTokenSetting(t *testing.T) {
	const token = "ghp_personalAccessToken123"
	s := svctest.NewSink(t, false, svctest.Answer{Status: http.StatusCreated, Body: `{"id": 5}`})
	rec := svctest.Deliver(t, svctest.Delivery{
		CM: map[string]string{
			"service.github":        "token: $github-token\nenterpriseBaseURL: " + s.URL + "/api/v3/\n",
			"template.app-deployed": githubStatusTemplate,
		},
		Secret:  map[string][]byte{"github-token": []byte(token)},
		Service: "github", Template: "app-deployed", App: githubApp("guestbook"),
	})
	reqs := s.Requests()
	if rec.State != outbox.StateDelivered || len(reqs) != 1 {
		t.Fatalf("state %s (%s) after %d requests", rec.State, rec.LastError, len(reqs))
	}
	if got := reqs[0].Header.Get("Authorization"); got != "token "+token || reqs[0].Path != "/api/v3/repos/example/guestbook/statuses/"+ghDeployed {
		t.Errorf("request %s with Authorization %q", reqs[0].Path, got)
	}
}

func TestGitHubStatuses(t *testing.T) {
	// script answers API calls from a list (the last repeats).
	script := func(answers ...svctest.Answer) func(svctest.Received) svctest.Answer {
		var mu sync.Mutex
		return func(svctest.Received) svctest.Answer {
			mu.Lock()
			defer mu.Unlock()
			a := answers[0]
			if len(answers) > 1 {
				answers = answers[1:]
			}
			return a
		}
	}
	ok := svctest.Answer{Status: http.StatusCreated, Body: `{"id": 1}`}
	run := func(t *testing.T, answers ...svctest.Answer) (outbox.Record, *fakeGitHub, *svctest.Sink) {
		t.Helper()
		f := newFakeGitHub(t, script(answers...))
		s := newGitHubSink(t, f)
		rec := svctest.Deliver(t, svctest.Delivery{CM: githubCM(s.URL, githubStatusTemplate), Secret: githubSecret(t), Service: "github", Template: "app-deployed", App: githubApp("guestbook")})
		f.check(t)
		return rec, f, s
	}
	t.Run("429 waits X-RateLimit-Reset then delivers", func(t *testing.T) {
		reset := fmt.Sprint(time.Now().Unix()) // now: no wait
		rec, _, s := run(t, svctest.Answer{Status: http.StatusTooManyRequests, Header: map[string]string{"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": reset}}, ok)
		if rec.State != outbox.StateDelivered || rec.Attempts != 1 || len(s.Requests()) != 3 {
			t.Fatalf("state %s attempts %d requests %d: %s", rec.State, rec.Attempts, len(s.Requests()), rec.LastError)
		}
	})
	t.Run("403 secondary rate limit waits Retry-After then delivers", func(t *testing.T) {
		rec, f, s := run(t, svctest.Answer{Status: http.StatusForbidden, Header: map[string]string{"Retry-After": "0"},
			Body: `{"message":"You have exceeded a secondary rate limit. Please wait a few minutes before you try again."}`}, ok)
		if rec.State != outbox.StateDelivered || rec.Attempts != 1 || len(s.Requests()) != 3 || f.exchanges() != 1 {
			t.Fatalf("state %s attempts %d requests %d exchanges %d: %s", rec.State, rec.Attempts, len(s.Requests()), f.exchanges(), rec.LastError)
		}
	})
	t.Run("403 without a rate limit is dead-lettered", func(t *testing.T) {
		rec, _, s := run(t, svctest.Answer{Status: http.StatusForbidden, Header: map[string]string{"X-RateLimit-Remaining": "4999", "X-RateLimit-Reset": fmt.Sprint(time.Now().Add(time.Hour).Unix())},
			Body: `{"message":"Resource not accessible by integration"}`})
		if rec.State != outbox.StateDead || rec.Attempts != 1 || len(s.Requests()) != 2 {
			t.Fatalf("state %s attempts %d requests %d: %s", rec.State, rec.Attempts, len(s.Requests()), rec.LastError)
		}
		svctest.MustContain(t, "last error", rec.LastError, "403", "Resource not accessible by integration", "commit status on example/guestbook")
	})
	t.Run("5xx retried with the same token", func(t *testing.T) {
		rec, f, _ := run(t, svctest.Answer{Status: http.StatusBadGateway, Body: "upstream"}, ok)
		if rec.State != outbox.StateDelivered || rec.Attempts != 2 || f.exchanges() != 1 {
			t.Fatalf("state %s attempts %d exchanges %d: %s", rec.State, rec.Attempts, f.exchanges(), rec.LastError)
		}
	})
	t.Run("4xx dead-lettered at once without a secret", func(t *testing.T) {
		// An answer that echoes the request's token (not in a form the
		// outbox's redaction knows).
		var echoed string
		f := newFakeGitHub(t, nil)
		f.api = func(r svctest.Received) svctest.Answer {
			echoed = r.Header.Get("Authorization")
			return svctest.Answer{Status: http.StatusUnprocessableEntity, Body: `{"message":"Validation Failed","documentation_url":"https://docs.github.com","seen":"` + strings.TrimPrefix(echoed, "token ") + `"}`}
		}
		s := newGitHubSink(t, f)
		rec := svctest.Deliver(t, svctest.Delivery{CM: githubCM(s.URL, githubStatusTemplate), Secret: githubSecret(t), Service: "github", Template: "app-deployed", App: githubApp("guestbook")})
		if rec.State != outbox.StateDead || rec.Attempts != 1 || len(s.Requests()) != 2 {
			t.Fatalf("state %s attempts %d requests %d", rec.State, rec.Attempts, len(s.Requests()))
		}
		_, pemKey := githubKey(t)
		svctest.MustContain(t, "last error", rec.LastError, "422", "Validation Failed")
		svctest.MustNotContain(t, "last error", rec.LastError, strings.TrimPrefix(echoed, "token "), strings.Split(pemKey, "\n")[1])
	})
}

func TestGitHubSettings(t *testing.T) {
	_, pemKey := githubKey(t)
	tests := []struct {
		name    string
		service string
		wantErr []string // parts of the error; none: valid
	}{
		{"app with numbers", "appID: 1\ninstallationID: 2\nprivateKey: $k\n", nil},
		{"app with quoted numbers", "appID: \"1\"\ninstallationID: '2'\nprivateKey: $k\n", nil},
		{"token", "token: $k\n", nil},
		{"nothing", "enterpriseBaseURL: https://ghe.example.com\n", []string{"appID: required", "installationID: required", "privateKey: required"}},
		{"both", "token: t\nappID: 1\n", []string{"token: set either"}},
		{"bad id", "appID: one\ninstallationID: 2\nprivateKey: $k\n", []string{"appID: want a positive integer"}},
		{"bad url", "token: t\nenterpriseBaseURL: ghe.example.com\n", []string{"enterpriseBaseURL"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			nc, err := config.ParseArgoCDConfigMap(map[string]string{"service.github": tt.service}, map[string][]byte{"k": []byte(pemKey)})
			var msg string
			if err != nil {
				msg = err.Error()
			} else if svc, ok := nc.Services["github"]; !ok || svc.Ext == nil {
				msg = fmt.Sprintf("not read: %+v", nc)
			} else {
				kind, _ := services.Lookup("github")
				if _, err := kind.New("github", svc.Ext.Settings, services.Options{}); err != nil {
					msg = err.Error()
				}
			}
			if len(tt.wantErr) == 0 && msg != "" {
				t.Fatalf("want valid, got %s", msg)
			}
			if len(tt.wantErr) > 0 && msg == "" {
				t.Fatalf("want an error with %q", tt.wantErr)
			}
			svctest.MustContain(t, "error", msg, tt.wantErr...)
			svctest.MustNotContain(t, "error", msg, strings.Split(pemKey, "\n")[1])
		})
	}
}
