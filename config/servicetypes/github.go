package servicetypes

import (
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
)

// GitHub is service type github.
var GitHub = &Type{
	Name:     "github",
	Settings: func() Settings { return &GitHubSettings{} },
	// A template without repoURLPath or revisionPath keeps the default.
	Block: func() any {
		return &GitHubBlock{RepoURLPath: githubDefaultRepoURLPath, RevisionPath: githubDefaultRevisionPath}
	},
}

// GitHubSettings are the keys of `service.github`. Argo CD authenticates
// as a GitHub App installation (appID, installationID, privateKey);
// crowsnest also takes a token (a personal access or other token sent as
// `Authorization: token ...`) instead.
type GitHubSettings struct {
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

// GitHubBlock is a template's `github:` block. RepoURLPath and
// RevisionPath are templates giving the repository and the commit; the
// others are what to do there, each when present.
type GitHubBlock struct {
	RepoURLPath        string                    `yaml:"repoURLPath" json:"repoURLPath,omitempty"`
	RevisionPath       string                    `yaml:"revisionPath" json:"revisionPath,omitempty"`
	Status             *GitHubStatus             `yaml:"status" json:"status,omitempty"`
	Deployment         *GitHubDeployment         `yaml:"deployment" json:"deployment,omitempty"`
	PullRequestComment *GitHubPullRequestComment `yaml:"pullRequestComment" json:"pullRequestComment,omitempty"`
	CheckRun           *GitHubCheckRun           `yaml:"checkRun" json:"checkRun,omitempty"`
	RepositoryDispatch *GitHubRepositoryDispatch `yaml:"repositoryDispatch" json:"repositoryDispatch,omitempty"`
}

// GitHubStatus is a commit status; the description is the message.
type GitHubStatus struct {
	State     string `yaml:"state" json:"state,omitempty"`
	Label     string `yaml:"label" json:"label,omitempty"`
	TargetURL string `yaml:"targetURL" json:"targetURL,omitempty"`
}

// GitHubDeployment is a deployment status, on the deployment of the
// revision to the environment (created when there is none).
type GitHubDeployment struct {
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

// GitHubPullRequestComment is a comment on the pull requests holding the
// revision; with CommentTag, a comment carrying the tag is updated
// instead of adding another.
type GitHubPullRequestComment struct {
	Content    string `yaml:"content" json:"content,omitempty"`
	CommentTag string `yaml:"commentTag" json:"commentTag,omitempty"`
}

// GitHubCheckRun is a check run on the revision.
type GitHubCheckRun struct {
	Name        string                `yaml:"name" json:"name,omitempty"`
	DetailsURL  string                `yaml:"details_url" json:"details_url,omitempty"`
	Status      string                `yaml:"status" json:"status,omitempty"`
	Conclusion  string                `yaml:"conclusion" json:"conclusion,omitempty"`
	StartedAt   string                `yaml:"started_at" json:"started_at,omitempty"`
	CompletedAt string                `yaml:"completed_at" json:"completed_at,omitempty"`
	Output      *GitHubCheckRunOutput `yaml:"output" json:"output,omitempty"`
}

// GitHubCheckRunOutput is a check run's output.
type GitHubCheckRunOutput struct {
	Title   string `yaml:"title" json:"title,omitempty"`
	Summary string `yaml:"summary" json:"summary,omitempty"`
	Text    string `yaml:"text" json:"text,omitempty"`
}

// GitHubRepositoryDispatch is a repository_dispatch event; ClientPayload
// is a JSON object.
type GitHubRepositoryDispatch struct {
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

// Check reports a token given with app authentication, an incomplete
// app authentication, an ID that is no number and an enterpriseBaseURL
// that is no http(s) URL.
func (s *GitHubSettings) Check() error {
	errs := []error{CheckURL("enterpriseBaseURL", s.EnterpriseBaseURL)}
	app := s.AppID != "" || s.InstallationID != "" || s.PrivateKey != ""
	switch {
	case s.Token != "" && app:
		errs = append(errs, errors.New("token: set either token or appID, installationID and privateKey, not both"))
	case s.Token == "":
		for _, kv := range [][2]string{{"appID", s.AppID}, {"installationID", s.InstallationID}} {
			if err := Require(kv[0], kv[1]); err != nil {
				errs = append(errs, err)
			} else if !IsSecretRef(kv[1]) {
				_, err := GitHubID(kv[0], kv[1])
				errs = append(errs, err)
			}
		}
		errs = append(errs, Require("privateKey", s.PrivateKey))
	}
	return errors.Join(errs...)
}

// GitHubID reads appID or installationID (a number, written with or
// without quotes); key names the setting in the error.
func GitHubID(key, v string) (int64, error) {
	id, err := strconv.ParseInt(v, 10, 64)
	if err != nil || id <= 0 {
		return 0, fmt.Errorf("%s: want a positive integer", key)
	}
	return id, nil
}

// HasApp reports whether the service authenticates as a GitHub App
// installation (appID, installationID, privateKey) rather than with a
// token.
func (s *GitHubSettings) HasApp() bool {
	return s.Token == "" && (s.AppID != "" || s.InstallationID != "" || s.PrivateKey != "")
}

// APIBase is the REST API's root with a trailing slash: GitHub's, or
// GitHub Enterprise Server's under /api/v3 (added unless the URL has it
// or the host is an api. host, as Argo CD's go-github does).
func (s *GitHubSettings) APIBase() (string, error) {
	if s.EnterpriseBaseURL == "" {
		return "https://api.github.com/", nil
	}
	u, err := url.Parse(s.EnterpriseBaseURL)
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
