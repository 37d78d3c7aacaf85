package github

import (
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"strings"

	"github.com/crowsnest-dev/crowsnest/internal/redact"
	"github.com/crowsnest-dev/crowsnest/internal/repourl"
	"github.com/crowsnest-dev/crowsnest/notify"
	"github.com/crowsnest-dev/crowsnest/notify/services/svc"
)

// Settings are the keys of `service.github`. Argo CD authenticates
// as a GitHub App installation (appID, installationID, privateKey);
// crowsnest also takes a token (a personal access or other token sent as
// `Authorization: token ...`) instead.
type Settings struct {
	AppID          string `yaml:"appID" json:"appID,omitempty" config:"intOrString"`
	InstallationID string `yaml:"installationID" json:"installationID,omitempty" config:"intOrString"`
	PrivateKey     string `yaml:"privateKey" json:"privateKey,omitempty"`
	// EnterpriseBaseURL is GitHub Enterprise Server's API URL
	// (https://ghe.example.com/api/v3; /api/v3 is added when missing).
	EnterpriseBaseURL  string `yaml:"enterpriseBaseURL" json:"enterpriseBaseURL,omitempty"`
	InsecureSkipVerify bool   `yaml:"insecureSkipVerify" json:"insecureSkipVerify,omitempty"`
	// Token is crowsnest's: Argo CD has only app authentication.
	Token string `yaml:"token" json:"token,omitempty"`
}

// Block is a template's `github:` block. RepoURLPath and
// RevisionPath are templates giving the repository and the commit; the
// others are what to do there, each when present.
type Block struct {
	RepoURLPath        string              `yaml:"repoURLPath" json:"repoURLPath,omitempty"`
	RevisionPath       string              `yaml:"revisionPath" json:"revisionPath,omitempty"`
	Status             *Status             `yaml:"status" json:"status,omitempty"`
	Deployment         *Deployment         `yaml:"deployment" json:"deployment,omitempty"`
	PullRequestComment *PullRequestComment `yaml:"pullRequestComment" json:"pullRequestComment,omitempty"`
	CheckRun           *CheckRun           `yaml:"checkRun" json:"checkRun,omitempty"`
	RepositoryDispatch *RepositoryDispatch `yaml:"repositoryDispatch" json:"repositoryDispatch,omitempty"`
}

// Status is a commit status; the description is the message.
type Status struct {
	State     string `yaml:"state" json:"state,omitempty"`
	Label     string `yaml:"label" json:"label,omitempty"`
	TargetURL string `yaml:"targetURL" json:"targetURL,omitempty"`
}

// Deployment is a deployment status, on the deployment of the
// revision to the environment (created when there is none).
type Deployment struct {
	State          string `yaml:"state" json:"state,omitempty"`
	Environment    string `yaml:"environment" json:"environment,omitempty"`
	EnvironmentURL string `yaml:"environmentURL" json:"environmentURL,omitempty"`
	LogURL         string `yaml:"logURL" json:"logURL,omitempty"`
	// RequiredContexts is sent as null when unset, as Argo CD does.
	RequiredContexts []string `yaml:"requiredContexts" json:"requiredContexts"`
	// AutoMerge defaults to true, TransientEnvironment to false.
	AutoMerge            *bool  `yaml:"autoMerge" json:"autoMerge,omitempty"`
	TransientEnvironment *bool  `yaml:"transientEnvironment" json:"transientEnvironment,omitempty"`
	Reference            string `yaml:"reference" json:"reference,omitempty"`
}

// PullRequestComment is a comment on the pull requests holding the
// revision; with CommentTag, a comment carrying the tag is updated
// instead of adding another.
type PullRequestComment struct {
	Content    string `yaml:"content" json:"content,omitempty"`
	CommentTag string `yaml:"commentTag" json:"commentTag,omitempty"`
}

// CheckRun is a check run on the revision.
type CheckRun struct {
	Name        string          `yaml:"name" json:"name,omitempty"`
	DetailsURL  string          `yaml:"details_url" json:"details_url,omitempty"`
	Status      string          `yaml:"status" json:"status,omitempty"`
	Conclusion  string          `yaml:"conclusion" json:"conclusion,omitempty"`
	StartedAt   string          `yaml:"started_at" json:"started_at,omitempty"`
	CompletedAt string          `yaml:"completed_at" json:"completed_at,omitempty"`
	Output      *CheckRunOutput `yaml:"output" json:"output,omitempty"`
}

// CheckRunOutput is a check run's output.
type CheckRunOutput struct {
	Title   string `yaml:"title" json:"title,omitempty"`
	Summary string `yaml:"summary" json:"summary,omitempty"`
	Text    string `yaml:"text" json:"text,omitempty"`
}

// RepositoryDispatch is a repository_dispatch event; ClientPayload
// is a JSON object.
type RepositoryDispatch struct {
	EventType     string `yaml:"event_type" json:"event_type,omitempty"`
	ClientPayload string `yaml:"client_payload" json:"client_payload,omitempty"`
}

// The block's defaults. For an Application with one source they render
// what Argo CD's `{{.app.spec.source.repoURL}}` and
// `{{.app.status.operationState.syncResult.revision}}` render; for one
// with several sources (no spec.source) the first source and its
// revision, where Argo CD's defaults find nothing.
const (
	githubDefaultRepoURLPath = `{{with .app.spec.source}}{{.repoURL}}{{else}}` +
		`{{with .app.spec.sources}}{{(index . 0).repoURL}}{{end}}{{end}}`
	githubDefaultRevisionPath = `{{with .app.status.operationState.syncResult.revision}}{{.}}{{else}}` +
		`{{with .app.status.operationState.syncResult.revisions}}{{index . 0}}{{end}}{{end}}`
)

// Kind describes service type github; package services lists it.
var Kind = &svc.Kind{
	Type:     "github",
	Settings: func() any { return &Settings{} },
	// A template without repoURLPath or revisionPath keeps the default.
	Block: func() any {
		return &Block{RepoURLPath: githubDefaultRepoURLPath, RevisionPath: githubDefaultRevisionPath}
	},
	Validate:         func(s any) error { return validateGitHub(s.(*Settings)) },
	New:              newGitHub,
	DefaultRecipient: true,
	Repository:       repository,
}

func validateGitHub(g *Settings) error {
	errs := []error{svc.CheckURL("enterpriseBaseURL", g.EnterpriseBaseURL)}
	app := g.AppID != "" || g.InstallationID != "" || g.PrivateKey != ""
	switch {
	case g.Token != "" && app:
		errs = append(errs, errors.New("token: set either token or appID, installationID and privateKey, not both"))
	case g.Token == "":
		for _, kv := range [][2]string{{"appID", g.AppID}, {"installationID", g.InstallationID}} {
			if err := svc.Require(kv[0], kv[1]); err != nil {
				errs = append(errs, err)
			} else if !svc.IsSecretRef(kv[1]) {
				_, err := parseGitHubID(kv[0], kv[1])
				errs = append(errs, err)
			}
		}
		errs = append(errs, svc.Require("privateKey", g.PrivateKey))
	}
	return errors.Join(errs...)
}

func newGitHub(name string, s any, o svc.Options) (notify.Service, error) {
	g := s.(*Settings)
	if err := validateGitHub(g); err != nil {
		return nil, err
	}
	api, err := githubAPIBase(g.EnterpriseBaseURL)
	if err != nil {
		return nil, err
	}
	c := svc.NewClient(name, g.InsecureSkipVerify, o)
	auth := &githubAuth{c: c, static: g.Token, sem: make(chan struct{}, 1)}
	if g.Token == "" {
		appID, err := parseGitHubID("appID", g.AppID)
		if err != nil {
			return nil, err
		}
		inst, err := parseGitHubID("installationID", g.InstallationID)
		if err != nil {
			return nil, err
		}
		if auth.key, err = parseGitHubKey(g.PrivateKey); err != nil {
			return nil, err
		}
		auth.appID = fmt.Sprint(appID)
		auth.tokenURL = fmt.Sprintf("%sapp/installations/%d/access_tokens", api, inst)
	}
	return &githubSender{c: c, auth: auth, api: api}, nil
}

// githubAPIBase is the REST API's root with a trailing slash: GitHub's,
// or GitHub Enterprise Server's under /api/v3 (added unless the URL has
// it or the host is an api. host, as Argo CD's go-github does).
func githubAPIBase(enterprise string) (string, error) {
	if enterprise == "" {
		return "https://api.github.com/", nil
	}
	u, err := url.Parse(enterprise)
	if err != nil {
		return "", errors.New("enterpriseBaseURL: not a URL")
	}
	if !strings.HasSuffix(u.Path, "/") {
		u.Path += "/"
	}
	if !strings.HasSuffix(u.Path, "/api/v3/") && !strings.HasPrefix(u.Host, "api.") && !strings.Contains(u.Host, ".api.") {
		u.Path += "api/v3/"
	}
	u.RawPath = ""
	return u.String(), nil
}

// githubName is what GitHub allows in an owner or repository name; it
// also keeps a repoURL from steering requests elsewhere in the API.
var githubName = regexp.MustCompile(`^[A-Za-z0-9_.-]+$`)

// acts reports whether the block asks for anything; Send skips one
// that does not.
func (b *Block) acts() bool {
	return b.Status != nil || b.Deployment != nil || b.PullRequestComment != nil || b.CheckRun != nil || b.RepositoryDispatch != nil
}

// githubTarget is the repository and commit a notification is about.
type githubTarget struct {
	owner, repo, rev string
}

// targetOf reads the rendered repoURLPath and revisionPath.
func targetOf(b *Block) (githubTarget, error) {
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
