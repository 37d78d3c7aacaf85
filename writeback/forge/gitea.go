package forge

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
)

// Gitea is the pull-request API of Gitea and Forgejo (API v1, the same on
// both for what crowsnest calls), authenticated with an access token
// that may write the repository's code and pull requests.
type Gitea struct{ c *client }

var _ Forge = (*Gitea)(nil)

// NewGitea returns the Gitea API client that authenticates with token.
func NewGitea(token string, o Options) *Gitea {
	return &Gitea{c: newClient(o, headerToken{"Authorization", "token ", token}, nil)}
}

// giteaPageSize is how many pull requests or labels one list request
// asks for: Gitea's default maximum.
const giteaPageSize = 50

// giteaMaxPages bounds a search through a repository's open pull
// requests: 1,000 is far more than a repository under review keeps open.
const giteaMaxPages = 20

// Find implements Forge: it pages through the open pull requests into
// base (Gitea has no search by head branch).
func (g *Gitea) Find(ctx context.Context, r Repo, head, base string) (*PullRequest, error) {
	for page := 1; page <= giteaMaxPages; page++ {
		q := url.Values{"state": {"open"}, "base_branch": {base}, "limit": {strconv.Itoa(giteaPageSize)}, "page": {strconv.Itoa(page)}}
		var pulls []pullJSON
		if err := g.c.call(ctx, r, http.MethodGet, reposPath(r)+"/pulls?"+q.Encode(), nil, &pulls); err != nil {
			return nil, err
		}
		if pr := findOpen(pulls, head, base); pr != nil {
			return pr, nil
		}
		if len(pulls) < giteaPageSize {
			return nil, nil
		}
	}
	return nil, fmt.Errorf("forge %s: more than %d open pull requests into %s", r, giteaPageSize*giteaMaxPages, base)
}

// Get implements Forge.
func (g *Gitea) Get(ctx context.Context, r Repo, number int) (*PullRequest, error) {
	var p pullJSON
	if err := g.c.call(ctx, r, http.MethodGet, reposPath(r)+"/pulls/"+strconv.Itoa(number), nil, &p); err != nil {
		return nil, err
	}
	return p.pullRequest(), nil
}

// Open implements Forge. Labels are sent as the repository's label IDs;
// names it does not have are left out.
func (g *Gitea) Open(ctx context.Context, r Repo, p Proposal) (*PullRequest, error) {
	in := struct {
		Head      string   `json:"head"`
		Base      string   `json:"base"`
		Title     string   `json:"title"`
		Body      string   `json:"body"`
		Labels    []int64  `json:"labels,omitempty"`
		Assignees []string `json:"assignees,omitempty"`
		Reviewers []string `json:"reviewers,omitempty"`
	}{Head: p.Head, Base: p.Base, Title: p.Title, Body: p.Body, Assignees: p.Assignees, Reviewers: p.Reviewers}
	if p.Draft {
		in.Title = giteaDraftPrefix + in.Title
	}
	if len(p.Labels) > 0 {
		ids, err := g.labelIDs(ctx, r, p.Labels)
		if err != nil {
			return nil, err
		}
		in.Labels = ids
	}
	var out pullJSON
	if err := g.c.call(ctx, r, http.MethodPost, reposPath(r)+"/pulls", in, &out); err != nil {
		return nil, err
	}
	pr := out.pullRequest()
	if p.AutoMerge {
		// Scheduled: Gitea merges once the branch's required checks
		// and approvals are in (at once when it requires none).
		am := struct {
			Do                     string `json:"Do"`
			MergeWhenChecksSucceed bool   `json:"merge_when_checks_succeed"`
		}{"merge", true}
		if err := g.c.call(ctx, r, http.MethodPost, reposPath(r)+"/pulls/"+strconv.Itoa(pr.Number)+"/merge", am, nil); err != nil {
			return pr, fmt.Errorf("pull request #%d opened, auto-merge not set: %w", pr.Number, err)
		}
	}
	return pr, nil
}

// giteaDraftPrefix marks a draft: the first of Gitea's default
// WORK_IN_PROGRESS_PREFIXES.
const giteaDraftPrefix = "WIP: "

// labelIDs returns the IDs of the repository's labels called names.
func (g *Gitea) labelIDs(ctx context.Context, r Repo, names []string) ([]int64, error) {
	var ids []int64
	for page := 1; page <= giteaMaxPages; page++ {
		q := url.Values{"limit": {strconv.Itoa(giteaPageSize)}, "page": {strconv.Itoa(page)}}
		var labels []labelJSON
		if err := g.c.call(ctx, r, http.MethodGet, reposPath(r)+"/labels?"+q.Encode(), nil, &labels); err != nil {
			return nil, err
		}
		for _, l := range labels {
			if slices.Contains(names, l.Name) {
				ids = append(ids, l.ID)
			}
		}
		if len(labels) < giteaPageSize {
			break
		}
	}
	return ids, nil
}

// Edit implements Forge.
func (g *Gitea) Edit(ctx context.Context, r Repo, number int, title, body string) (*PullRequest, error) {
	in := struct {
		Title string `json:"title"`
		Body  string `json:"body"`
	}{title, body}
	var out pullJSON
	if err := g.c.call(ctx, r, http.MethodPatch, reposPath(r)+"/pulls/"+strconv.Itoa(number), in, &out); err != nil {
		return nil, err
	}
	return out.pullRequest(), nil
}

// Close implements Forge.
func (g *Gitea) Close(ctx context.Context, r Repo, number int, comment string) error {
	n := strconv.Itoa(number)
	if comment != "" {
		in := struct {
			Body string `json:"body"`
		}{comment}
		if err := g.c.call(ctx, r, http.MethodPost, reposPath(r)+"/issues/"+n+"/comments", in, nil); err != nil {
			return err
		}
	}
	in := struct {
		State string `json:"state"`
	}{"closed"}
	err := g.c.call(ctx, r, http.MethodPatch, reposPath(r)+"/pulls/"+n, in, nil)
	return err
}
