package conformance

import (
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// githubWireKey is the GitHub App's key both sides sign their JWTs with.
var githubWireKey = sync.OnceValues(func() (*rsa.PrivateKey, error) { return rsa.GenerateKey(rand.Reader, 2048) })

// githubWireCM configures the GitHub service as Argo CD's docs do: app
// authentication, GitHub Enterprise at the sink (its /api/v3 form).
func githubWireCM(t *testing.T, tmpl string) (map[string]string, map[string][]byte) {
	t.Helper()
	k, err := githubWireKey()
	if err != nil {
		t.Fatal(err)
	}
	pemKey := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(k)})
	return map[string]string{
		"service.github":        "appID: 1234\ninstallationID: 42\nprivateKey: $github-privateKey\nenterpriseBaseURL: SINK/api/v3\n",
		"template.app-deployed": tmpl,
	}, map[string][]byte{"github-privateKey": pemKey}
}

// githubWire is a GitHub API both sides talk to: it issues one
// installation token, answers the calls the cases need, and records the
// Authorization header of every request (notifications-engine's side
// first: it sends first).
type githubWire struct {
	mu    sync.Mutex
	auths []string
	// comments is the answer to a pull request's comment listing.
	comments string
}

const githubWireToken = "v1.0123456789abcdef0123456789abcdef01234567"

func (g *githubWire) answer(r wireRequest) (int, string) {
	g.mu.Lock()
	g.auths = append(g.auths, r.Header.Get("Authorization"))
	g.mu.Unlock()
	p := r.Path
	switch {
	case strings.HasSuffix(p, "/app/installations/42/access_tokens"):
		return http.StatusCreated, fmt.Sprintf(`{"token":%q,"expires_at":%q}`, githubWireToken, time.Now().Add(time.Hour).UTC().Format(time.RFC3339))
	case r.Method == http.MethodGet && strings.HasSuffix(p, "/deployments"):
		return http.StatusOK, `[]`
	case r.Method == http.MethodPost && strings.HasSuffix(p, "/deployments"):
		return http.StatusCreated, `{"id": 77}`
	case strings.HasSuffix(p, "/pulls"):
		return http.StatusOK, `[{"number": 5}]`
	case r.Method == http.MethodGet && strings.HasSuffix(p, "/comments"):
		if g.comments == "" {
			return http.StatusOK, `[]`
		}
		return http.StatusOK, g.comments
	case strings.HasSuffix(p, "/dispatches"):
		return http.StatusNoContent, ""
	}
	return http.StatusCreated, `{"id": 1}`
}

func TestGitHubOnTheWire(t *testing.T) {
	const tag = "<!-- argocd-notifications deploy -->"
	tests := []struct {
		name, tmpl string
		// comments answers the comment listing (a tagged comment to update).
		comments string
	}{
		{name: "commit status", tmpl: `message: Application {{.app.metadata.name}} is now running a new version of deployments manifests, a message longer than GitHub's one hundred and forty characters limit.
github:
  status:
    state: success
    label: "continuous-delivery/{{.app.metadata.name}}"
    targetURL: "{{.context.argocdUrl}}/applications/{{.app.metadata.name}}?operation=true"
`},
		{name: "deployment with defaults", tmpl: `message: "{{.app.metadata.name}} deployed"
github:
  deployment:
    state: success
    environment: production
    environmentURL: "https://{{.app.metadata.name}}.example.com"
    logURL: "{{.context.argocdUrl}}/applications/{{.app.metadata.name}}?operation=true"
`},
		{name: "deployment with every field", tmpl: `message: "{{.app.metadata.name}} deployed"
github:
  repoURLPath: "{{.app.spec.source.repoURL}}"
  revisionPath: "{{.app.status.sync.revision}}"
  deployment:
    state: in_progress
    environment: "staging-{{.app.metadata.name}}"
    environmentURL: ""
    logURL: "{{.context.argocdUrl}}"
    requiredContexts: ["ci/build", "ci/test"]
    autoMerge: false
    transientEnvironment: true
    reference: v1.2.3
`},
		{name: "pull request comment", tmpl: `message: unused
github:
  pullRequestComment:
    content: "Deployed {{.app.metadata.name}} <b>now</b> & then"
`},
		{name: "pull request comment with a new tag", tmpl: `message: unused
github:
  pullRequestComment:
    content: "Deployed {{.app.metadata.name}}"
    commentTag: deploy
`},
		{name: "pull request comment updated", comments: `[{"id": 100, "body": "LGTM"}, {"id": 101, "body": "Deployed before\n` + tag + `"}]`, tmpl: `message: unused
github:
  pullRequestComment:
    content: "Deployed {{.app.metadata.name}} again"
    commentTag: deploy
`},
		{name: "check run", tmpl: `message: unused
github:
  checkRun:
    name: "argocd/{{.app.metadata.name}}"
    details_url: "{{.context.argocdUrl}}/applications/{{.app.metadata.name}}"
    conclusion: success
    started_at: "2026-11-26T09:59:00+01:00"
    completed_at: "{{.app.status.operationState.finishedAt}}"
    output:
      title: Deployed
      summary: "{{.app.metadata.name}} is {{.app.status.health.status}}"
`},
		{name: "repository dispatch", tmpl: `message: unused
github:
  repositoryDispatch:
    event_type: argocd-deployed
    client_payload: '{"app": "{{.app.metadata.name}}", "revision": "{{.app.status.operationState.syncResult.revision}}"}'
`},
		{name: "everything at once", tmpl: `message: "{{.app.metadata.name}} deployed"
github:
  status:
    state: success
    label: cd
  deployment:
    state: success
    environment: production
  pullRequestComment:
    content: done
`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cm, secret := githubWireCM(t, tt.tmpl)
			g := &githubWire{comments: tt.comments}
			engine, crowsnest := sendBothSides(t, wireCase{
				CM: cm, Secret: secret, Service: "github", Template: "app-deployed",
				App: wireApp("guestbook"), Answer: g.answer,
			})
			compareGitHubRequests(t, engine, crowsnest)
			compareGitHubAuth(t, g.auths, len(engine))
		})
	}
}

// compareGitHubRequests compares what the two sides sent as
// compareOnWire does (method, path, query, headers, body as JSON
// values), with one difference allowed: notifications-engine updates a
// tagged comment by sending back the whole comment GitHub listed (its
// id here, every field GitHub returns in real life), crowsnest sends
// only the new body, the one field GitHub's API reads. Authorization
// is compared by compareGitHubAuth.
func compareGitHubRequests(t *testing.T, want, got []wireRequest) {
	t.Helper()
	if len(want) == 0 {
		t.Fatal("notifications-engine sent nothing: the case tests nothing")
	}
	if len(want) != len(got) {
		t.Fatalf("notifications-engine made %d requests, crowsnest %d\nengine:    %+v\ncrowsnest: %+v", len(want), len(got), want, got)
	}
	for i := range want {
		w, g := want[i], got[i]
		if w.Method != g.Method || w.Path != g.Path || w.Query != g.Query {
			t.Errorf("request %d: notifications-engine %s %s?%s, crowsnest %s %s?%s", i, w.Method, w.Path, w.Query, g.Method, g.Path, g.Query)
		}
		for _, h := range []string{"Accept", "Content-Type", "X-GitHub-Api-Version"} {
			if w.Header.Get(h) != g.Header.Get(h) {
				t.Errorf("request %d (%s): header %s: notifications-engine %q, crowsnest %q", i, w.Path, h, w.Header.Get(h), g.Header.Get(h))
			}
		}
		if w.Body == "" && g.Body == "" {
			continue
		}
		var wb, gb any
		if err := json.Unmarshal([]byte(w.Body), &wb); err != nil {
			t.Fatalf("request %d: notifications-engine's body %q: %v", i, w.Body, err)
		}
		if err := json.Unmarshal([]byte(g.Body), &gb); err != nil {
			t.Fatalf("request %d: crowsnest's body %q: %v", i, g.Body, err)
		}
		if m, ok := wb.(map[string]any); ok && w.Method == http.MethodPatch && strings.Contains(w.Path, "/issues/comments/") {
			wb = map[string]any{"body": m["body"]}
		}
		if !reflect.DeepEqual(wb, gb) {
			t.Errorf("request %d (%s %s) body (-notifications-engine +crowsnest):\n%s", i, w.Method, w.Path, cmp.Diff(wb, gb))
		}
	}
}

// compareGitHubAuth checks the Authorization headers both sides sent
// (n requests each, notifications-engine's first): the installation
// token on API calls, and on the token exchange an app JWT that the
// key's public half verifies, with the same header and claims. Their
// iat and exp may differ by the second the two sides signed in.
func compareGitHubAuth(t *testing.T, auths []string, n int) {
	t.Helper()
	if len(auths) != 2*n {
		t.Fatalf("recorded %d Authorization headers, want %d", len(auths), 2*n)
	}
	k, _ := githubWireKey()
	for i := range n {
		w, g := auths[i], auths[n+i]
		if !strings.HasPrefix(w, "Bearer ") {
			if w != g || w != "token "+githubWireToken {
				t.Errorf("request %d: Authorization: notifications-engine %q, crowsnest %q, want the installation token", i, w, g)
			}
			continue
		}
		wh, wc, err := verifyGitHubJWT(&k.PublicKey, w)
		if err != nil {
			t.Fatalf("request %d: notifications-engine's JWT: %v", i, err)
		}
		gh, gc, err := verifyGitHubJWT(&k.PublicKey, g)
		if err != nil {
			t.Fatalf("request %d: crowsnest's JWT: %v", i, err)
		}
		if d := cmp.Diff(wh, gh); d != "" {
			t.Errorf("JWT header (-notifications-engine +crowsnest):\n%s", d)
		}
		wIat, _ := wc["iat"].(float64)
		wExp, _ := wc["exp"].(float64)
		gIat, _ := gc["iat"].(float64)
		gExp, _ := gc["exp"].(float64)
		if wIat == 0 || wExp-wIat != gExp-gIat || gIat < wIat || gIat-wIat > 5 {
			t.Errorf("JWT times: notifications-engine iat %v exp %v, crowsnest iat %v exp %v", wc["iat"], wc["exp"], gc["iat"], gc["exp"])
		}
		delete(wc, "iat")
		delete(wc, "exp")
		delete(gc, "iat")
		delete(gc, "exp")
		if d := cmp.Diff(wc, gc); d != "" {
			t.Errorf("JWT claims besides iat and exp (-notifications-engine +crowsnest):\n%s", d)
		}
	}
}

// verifyGitHubJWT checks an RS256 JWT's signature and returns its
// header and claims.
func verifyGitHubJWT(pub *rsa.PublicKey, auth string) (header, claims map[string]any, err error) {
	parts := strings.Split(strings.TrimPrefix(auth, "Bearer "), ".")
	if len(parts) != 3 {
		return nil, nil, fmt.Errorf("%d parts", len(parts))
	}
	enc := base64.RawURLEncoding
	sig, err := enc.DecodeString(parts[2])
	if err != nil {
		return nil, nil, err
	}
	sum := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
	if err := rsa.VerifyPKCS1v15(pub, crypto.SHA256, sum[:], sig); err != nil {
		return nil, nil, err
	}
	hb, err := enc.DecodeString(parts[0])
	if err != nil || json.Unmarshal(hb, &header) != nil {
		return nil, nil, fmt.Errorf("header %q", hb)
	}
	cb, err := enc.DecodeString(parts[1])
	if err != nil || json.Unmarshal(cb, &claims) != nil {
		return nil, nil, fmt.Errorf("claims %q", cb)
	}
	return header, claims, nil
}
