package git

import (
	"crypto/sha256"
	"fmt"
	"strings"

	"github.com/crowsnest-dev/crowsnest/internal/repourl"
	"github.com/crowsnest-dev/crowsnest/writeback/forge"
)

// AppLender lends the operator's GitHub App for the forge API of a
// host, to pull-request writes whose pushing credentials have no token
// (an SSH key): they still push with their own credentials, and only the
// API calls are the app's. internal/setup's lends the notifications'
// github service on the hosts git.forges opts in.
type AppLender interface {
	// GitHubApp returns the app lent for host (lower case, as
	// git.forges names it: an http(s) URL's port kept, an SSH URL's
	// not); ok is false when none is lent for it, and err says why the
	// one lent for it cannot be had.
	GitHubApp(host string) (app LentApp, ok bool, err error)
}

// LentApp is a GitHub App installation lent for a host's forge API.
type LentApp struct {
	// Source names the app's settings in errors ("notifications
	// service github"), never a secret.
	Source string
	App    forge.GitHubApp
	// TLS is how the app's API is trusted: its own settings', not
	// git.tls', as the app is its settings' credential.
	TLS TLS
}

// maxLentApps bounds the clients of lent apps kept: an operator has a few,
// and one whose key is rotated leaves an old client behind.
const maxLentApps = 8

// dryRunAppToken stands for a lent app's installation token in a dry run,
// which exchanges none: its requests show "<redacted>" in its place.
const dryRunAppToken = "dry-run"

// lentForge is the forge of req's repository called as the app lent for
// its host; without one, errNoToken.
func (t *TokenForges) lentForge(req ForgeRequest) (forge.Forge, forge.Repo, error) {
	u, ok := repourl.Parse(req.RepoURL)
	if t.Apps == nil || !ok {
		return nil, forge.Repo{}, errNoToken
	}
	lent, ok, err := t.Apps.GitHubApp(strings.ToLower(u.Host))
	if err != nil {
		return nil, forge.Repo{}, err
	}
	if !ok {
		return nil, forge.Repo{}, errNoToken
	}
	r, err := t.resolver(req.Transport, lent.TLS)
	if err != nil {
		return nil, forge.Repo{}, fmt.Errorf("%s: %w", lent.Source, err)
	}
	repo, err := r.GitHubRepo(req.RepoURL, req.Kind)
	if err != nil {
		return nil, forge.Repo{}, err
	}
	if req.Transport != nil {
		return forge.NewGitHub(dryRunAppToken, r.Options), repo, nil
	}
	g, err := t.appClient(r, lent)
	if err != nil {
		return nil, forge.Repo{}, fmt.Errorf("%s: %w", lent.Source, err)
	}
	return g, repo, nil
}

// appClient returns the client of lent, one per app, installation, API,
// key and trust, so that the writes share its installation token (one
// exchange, kept until a minute before it expires).
func (t *TokenForges) appClient(r *forge.Resolver, lent LentApp) (*forge.GitHub, error) {
	a := lent.App
	key := fmt.Sprintf("%d/%d/%s/%x/%t/%x", a.AppID, a.InstallationID, a.API, sha256.Sum256([]byte(a.PrivateKey)),
		lent.TLS.InsecureSkipVerify, sha256.Sum256(lent.TLS.CABundle))
	t.mu.Lock()
	defer t.mu.Unlock()
	if g, ok := t.apps[key]; ok {
		return g, nil
	}
	g, err := r.NewGitHubApp(a)
	if err != nil {
		return nil, err
	}
	if t.apps == nil || len(t.apps) >= maxLentApps {
		t.apps = map[string]*forge.GitHub{}
	}
	t.apps[key] = g
	return g, nil
}
