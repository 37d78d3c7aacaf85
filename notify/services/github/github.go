package github

import (
	"fmt"
	"net/url"
	"regexp"
	"strings"

	"github.com/crowsnest-dev/crowsnest/config/servicetypes"
	"github.com/crowsnest-dev/crowsnest/internal/githubapp"
	"github.com/crowsnest-dev/crowsnest/internal/redact"
	"github.com/crowsnest-dev/crowsnest/internal/repourl"
	"github.com/crowsnest-dev/crowsnest/notify"
	"github.com/crowsnest-dev/crowsnest/notify/services/svc"
)

// Kind describes service type github; package services lists it.
var Kind = &svc.Kind{
	Name:             "github",
	Type:             servicetypes.GitHub,
	New:              newGitHub,
	DefaultRecipient: true,
	Repository:       repository,
}

func newGitHub(name string, s any, o svc.Options) (notify.Service, error) {
	g := s.(*servicetypes.GitHubSettings)
	if err := g.Check(); err != nil {
		return nil, err
	}
	api, err := g.APIBase()
	if err != nil {
		return nil, err
	}
	c := svc.NewClient(name, g.InsecureSkipVerify, o)
	auth := &githubAuth{c: c, static: g.Token}
	if g.Token == "" {
		appID, err := servicetypes.GitHubID("appID", g.AppID)
		if err != nil {
			return nil, err
		}
		inst, err := servicetypes.GitHubID("installationID", g.InstallationID)
		if err != nil {
			return nil, err
		}
		auth.tokenURL = api + githubapp.TokenPath(inst)
		if auth.app, err = githubapp.New(appID, g.PrivateKey, auth, c.Now); err != nil {
			return nil, err
		}
	}
	return &githubSender{c: c, auth: auth, api: api}, nil
}

// githubName is what GitHub allows in an owner or repository name; it
// also keeps a repoURL from steering requests elsewhere in the API.
var githubName = regexp.MustCompile(`^[A-Za-z0-9_.-]+$`)

// acts reports whether the block asks for anything; Send skips one
// that does not.
func acts(b *servicetypes.GitHubBlock) bool {
	return b.Status != nil || b.Deployment != nil || b.PullRequestComment != nil || b.CheckRun != nil || b.RepositoryDispatch != nil
}

// githubTarget is the repository and commit a notification is about.
type githubTarget struct {
	owner, repo, rev string
}

// targetOf reads the rendered repoURLPath and revisionPath.
func targetOf(b *servicetypes.GitHubBlock) (githubTarget, error) {
	parts := strings.Split(repourl.FullName(b.RepoURLPath), "/")
	if len(parts) < 2 {
		return githubTarget{}, fmt.Errorf("github.repoURLPath: %q has no owner/repository", redact.URL(b.RepoURLPath))
	}
	t := githubTarget{owner: parts[0], repo: parts[1], rev: b.RevisionPath}
	for _, n := range []string{t.owner, t.repo} {
		if !githubName.MatchString(n) || n == "." || n == ".." {
			return githubTarget{}, fmt.Errorf("github.repoURLPath: %q is not a GitHub owner or repository name", n)
		}
	}
	return t, nil
}

// needRevision fails when the revision is missing or could climb out
// of its place in an API path.
func (t githubTarget) needRevision(what string) error {
	if t.rev == "" || t.rev == "<no value>" {
		return fmt.Errorf("%s: github.revisionPath rendered no revision (has the Application synced?)", what)
	}
	for _, seg := range strings.Split(t.rev, "/") {
		if seg == "." || seg == ".." {
			return fmt.Errorf("%s: github.revisionPath: %q is not a Git revision", what, t.rev)
		}
	}
	return nil
}

// path is repos/{owner}/{repo}/ followed by elems.
func (t githubTarget) path(elems ...string) string {
	return "repos/" + t.owner + "/" + t.repo + "/" + strings.Join(elems, "/")
}

// escapedRev is the revision in a path, each /-separated part escaped
// (go-github's refURLEscape).
func (t githubTarget) escapedRev() string {
	parts := strings.Split(t.rev, "/")
	for i, p := range parts {
		parts[i] = url.PathEscape(p)
	}
	return strings.Join(parts, "/")
}

func (t githubTarget) String() string { return t.owner + "/" + t.repo }

// truncRunes keeps s to n runes, ending with "..." when cut (GitHub's
// limits count characters).
func truncRunes(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-3]) + "..."
}
