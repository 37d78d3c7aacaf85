package forge

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	textredact "github.com/crowsnest-dev/crowsnest/internal/redact"

	"github.com/crowsnest-dev/crowsnest/internal/githubapp"
)

// GitHub is the pull-request API of github.com and GitHub Enterprise
// Server (REST v3, and GraphQL for auto-merge, which REST lacks),
// authenticated with a token or as a GitHub App installation.
type GitHub struct{ c *client }

var _ Forge = (*GitHub)(nil)

// githubHeader is what every request carries besides the credential:
// the media type and API version go-github sends, so that GitHub answers
// crowsnest as it answers its official client.
var githubHeader = http.Header{
	"Accept":               {"application/vnd.github.v3+json"},
	"X-Github-Api-Version": {"2022-11-28"},
}

// NewGitHub returns the GitHub client that authenticates with token: a
// personal access token (fine-grained: pull requests and contents
// read and write; classic: repo) or any other token GitHub takes as a
// Bearer token.
func NewGitHub(token string, o Options) *GitHub {
	return &GitHub{c: newClient(o, headerToken{"Authorization", "Bearer ", token}, githubHeader)}
}

// GitHubApp is a GitHub App installation crowsnest acts as: its pull
// requests are the app's ("name[bot]"), and its tokens expire by
// themselves within the hour.
type GitHubApp struct {
	// API is the REST API root the installation's tokens are issued at:
	// "https://api.github.com", or "https://HOST/api/v3" on GitHub
	// Enterprise Server.
	API string
	// AppID and InstallationID are the app's and its installation's
	// numeric IDs.
	AppID, InstallationID int64
	// PrivateKey is one of the app's private keys, PEM.
	PrivateKey string
}

// NewGitHubApp returns the GitHub client that authenticates as app's
// installation. Its token is exchanged on first use, kept until a minute
// before it expires, and renewed once when GitHub refuses it (401).
func NewGitHubApp(app GitHubApp, o Options) (*GitHub, error) {
	cred, err := newGitHubAppToken(app, o)
	if err != nil {
		return nil, err
	}
	return &GitHub{c: cred.c}, nil
}

// newGitHubAppToken is app's credential, with the client that exchanges
// its tokens (and calls the API with them).
func newGitHubAppToken(app GitHubApp, o Options) (*githubAppToken, error) {
	if app.InstallationID <= 0 {
		return nil, fmt.Errorf("GitHub App: installationID: want a positive integer")
	}
	api := strings.TrimSuffix(app.API, "/")
	if api == "" {
		api = GitHubAPI
	}
	cred := &githubAppToken{api: api, installation: app.InstallationID}
	cred.c = newClient(o, cred, githubHeader)
	src, err := githubapp.New(app.AppID, app.PrivateKey, cred, nil)
	if err != nil {
		return nil, fmt.Errorf("GitHub App: %w", err)
	}
	cred.src = src
	return cred, nil
}

// githubAppToken is the credential of a GitHub App installation: its
// installation token, exchanged through the same client.
type githubAppToken struct {
	c            *client
	src          *githubapp.Source
	api          string
	installation int64
}

var _ githubapp.Exchanger = (*githubAppToken)(nil)

func (a *githubAppToken) set(ctx context.Context, r *http.Request) (string, error) {
	tok, err := a.src.Token(ctx)
	if err != nil {
		return "", err
	}
	r.Header.Set("Authorization", "Bearer "+tok)
	return tok, nil
}

func (a *githubAppToken) refused(secret string) bool {
	a.src.Forget(secret)
	return true
}

// Exchange implements githubapp.Exchanger.
func (a *githubAppToken) Exchange(ctx context.Context, jwt string) ([]byte, error) {
	path := "/" + githubapp.TokenPath(a.installation)
	var body json.RawMessage
	err := a.c.send(ctx, request{
		target: textredact.URL(a.api) + " GitHub App installation " + strconv.FormatInt(a.installation, 10),
		method: http.MethodPost, path: path, url: a.api + path,
		in: json.RawMessage("null"), out: &body, cred: headerToken{"Authorization", "Bearer ", jwt},
	})
	return body, err
}

func githubPullPath(r Repo, number int) string {
	return reposPath(r) + "/pulls/" + strconv.Itoa(number)
}

func githubIssuePath(r Repo, number int) string {
	return reposPath(r) + "/issues/" + strconv.Itoa(number)
}

// Find implements Forge: GitHub filters by head (OWNER:BRANCH, a branch
// of the repository itself, not of a fork) and base.
func (g *GitHub) Find(ctx context.Context, r Repo, head, base string) (*PullRequest, error) {
	q := url.Values{"state": {"open"}, "head": {r.Owner + ":" + head}, "base": {base}}
	var pulls []pullJSON
	if err := g.c.call(ctx, r, http.MethodGet, reposPath(r)+"/pulls?"+q.Encode(), nil, &pulls); err != nil {
		return nil, err
	}
	return findOpen(pulls, head, base), nil
}

// Get implements Forge.
func (g *GitHub) Get(ctx context.Context, r Repo, number int) (*PullRequest, error) {
	var p pullJSON
	if err := g.c.call(ctx, r, http.MethodGet, githubPullPath(r, number), nil, &p); err != nil {
		return nil, err
	}
	return p.pullRequest(), nil
}

// Open implements Forge. GitHub takes labels, reviewers and assignees
// only once the pull request exists: each is one more request, and when
// one fails the pull request is returned with the error, the rest not
// asked for. A label the repository does not have is created by GitHub
// (with its default colour) rather than failing the request.
func (g *GitHub) Open(ctx context.Context, r Repo, p Proposal) (*PullRequest, error) {
	in := struct {
		Title string `json:"title"`
		Head  string `json:"head"`
		Base  string `json:"base"`
		Body  string `json:"body"`
		Draft bool   `json:"draft,omitempty"`
	}{p.Title, p.Head, p.Base, p.Body, p.Draft}
	var out pullJSON
	if err := g.c.call(ctx, r, http.MethodPost, reposPath(r)+"/pulls", in, &out); err != nil {
		return nil, err
	}
	pr := out.pullRequest()
	if len(p.Labels) > 0 {
		// The names as a bare array, as go-github sends them (GitHub
		// takes {"labels": [...]} too).
		var labels []labelJSON
		if err := g.c.call(ctx, r, http.MethodPost, githubIssuePath(r, pr.Number)+"/labels", p.Labels, &labels); err != nil {
			return pr, fmt.Errorf("pull request #%d opened, labels not added: %w", pr.Number, err)
		}
		pr.Labels = pr.Labels[:0]
		for _, l := range labels {
			pr.Labels = append(pr.Labels, l.Name)
		}
	}
	if len(p.Reviewers) > 0 {
		in := struct {
			Reviewers []string `json:"reviewers"`
		}{p.Reviewers}
		if err := g.c.call(ctx, r, http.MethodPost, githubPullPath(r, pr.Number)+"/requested_reviewers", in, nil); err != nil {
			return pr, fmt.Errorf("pull request #%d opened, reviewers not requested: %w", pr.Number, err)
		}
	}
	if len(p.Assignees) > 0 {
		in := struct {
			Assignees []string `json:"assignees"`
		}{p.Assignees}
		if err := g.c.call(ctx, r, http.MethodPost, githubIssuePath(r, pr.Number)+"/assignees", in, nil); err != nil {
			return pr, fmt.Errorf("pull request #%d opened, assignees not added: %w", pr.Number, err)
		}
	}
	if p.AutoMerge {
		if err := g.autoMerge(ctx, r, pr, out.NodeID); err != nil {
			return pr, fmt.Errorf("pull request #%d opened, auto-merge not set: %w", pr.Number, err)
		}
	}
	return pr, nil
}

// Edit implements Forge.
func (g *GitHub) Edit(ctx context.Context, r Repo, number int, title, body string) (*PullRequest, error) {
	in := struct {
		Title string `json:"title"`
		Body  string `json:"body"`
	}{title, body}
	var out pullJSON
	if err := g.c.call(ctx, r, http.MethodPatch, githubPullPath(r, number), in, &out); err != nil {
		return nil, err
	}
	return out.pullRequest(), nil
}

// Close implements Forge: the comment is an issue comment (the pull
// request's conversation), then the pull request is closed.
func (g *GitHub) Close(ctx context.Context, r Repo, number int, comment string) error {
	if comment != "" {
		in := struct {
			Body string `json:"body"`
		}{comment}
		if err := g.c.call(ctx, r, http.MethodPost, githubIssuePath(r, number)+"/comments", in, nil); err != nil {
			return err
		}
	}
	in := struct {
		State string `json:"state"`
	}{"closed"}
	return g.c.call(ctx, r, http.MethodPatch, githubPullPath(r, number), in, nil)
}

// GitHubAppTokens returns the installation token source of app: the token
// a Git push authenticates with ("x-access-token" and the token), as Argo
// CD's GitHub App repository credentials do, and that calls the API as
// the app. Tokens are exchanged on first use and kept until a minute
// before they expire.
func GitHubAppTokens(app GitHubApp, o Options) (*githubapp.Source, error) {
	cred, err := newGitHubAppToken(app, o)
	if err != nil {
		return nil, err
	}
	return cred.src, nil
}
