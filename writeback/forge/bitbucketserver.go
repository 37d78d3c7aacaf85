package forge

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	textredact "github.com/crowsnest-dev/crowsnest/internal/redact"
	"github.com/crowsnest-dev/crowsnest/internal/repourl"
)

// BitbucketServer is the pull-request API of Bitbucket Data Center and of
// Bitbucket Server before it (REST API 1.0 under rest/api/latest,
// https://developer.atlassian.com/server/bitbucket/rest/v906/api-group-pull-requests/).
// A Repo's API is the instance's "https://HOST[/CONTEXT]/rest/api/latest",
// its Owner the project key ("~USER" for a personal repository) and its
// Name the repository slug (BitbucketServerRepo reads them from a clone
// URL).
//
// What it makes of a Proposal: Reviewers are user names (the login,
// which Bitbucket's user slug equals in lower case). Labels and Assignees
// are left out, as Bitbucket pull requests have neither. Draft opens a
// draft on Data Center 8.18 and later; older versions open a pull request
// ready for review. AutoMerge asks for a merge with autoMerge set: on Data
// Center 8.15 and later, with auto-merge allowed for the repository,
// Bitbucket merges once the merge checks pass; older versions merge at
// once if they pass already and refuse otherwise.
type BitbucketServer struct{ c *client }

var _ Forge = (*BitbucketServer)(nil)

// NewBitbucketServer returns the Bitbucket Data Center client. With a
// username it authenticates with HTTP Basic (the user's password or an
// HTTP access token); without one secret is a bearer token (an HTTP
// access token of a user, project or repository).
func NewBitbucketServer(username, secret string, o Options) *BitbucketServer {
	return &BitbucketServer{c: newClient(o, bitbucketAuth(username, secret), nil)}
}

// BitbucketServerRepo maps a Bitbucket Data Center clone or browse URL
// (https://HOST[/CONTEXT]/scm/KEY/REPO.git, https://HOST/projects/KEY/repos/REPO,
// https://HOST/users/USER/repos/REPO, ssh://git@HOST:7999/KEY/REPO.git)
// to its Repo. An SSH URL says nothing of the web server: its API is
// taken to be https://HOST/rest/api/latest.
func BitbucketServerRepo(repoURL string) (Repo, error) {
	u, ok := repourl.Parse(repoURL)
	seg, clean := u.Segments()
	if ok && clean {
		web := u.Scheme == "https" || u.Scheme == "http"
		for i := range seg {
			var key, slug string
			switch {
			case !web && i == 0 && len(seg) == 2:
				key, slug = seg[0], seg[1]
			case web && seg[i] == "scm" && len(seg) == i+3:
				key, slug = seg[i+1], seg[i+2]
			case web && (seg[i] == "projects" || seg[i] == "users") && len(seg) >= i+4 && seg[i+2] == "repos":
				key, slug = seg[i+1], seg[i+3]
				if seg[i] == "users" {
					key = "~" + key
				}
			default:
				continue
			}
			api := "https://" + u.Host
			if web {
				api = u.Scheme + "://" + u.Host
				for _, s := range seg[:i] { // the context path
					api += "/" + url.PathEscape(s)
				}
			}
			if !strings.HasPrefix(key, "~") {
				key = strings.ToUpper(key) // keys are upper case; clone URLs often are not
			}
			return Repo{API: api + "/rest/api/latest", Owner: key, Name: slug}, nil
		}
	}
	return Repo{}, fmt.Errorf("%s is not a Bitbucket Data Center repository URL (HOST/scm/KEY/REPO)", textredact.URL(repoURL))
}

type bitbucketServerRepoRef struct {
	Slug    string `json:"slug"`
	Project struct {
		Key string `json:"key"`
	} `json:"project"`
}

type bitbucketServerRef struct {
	ID           string                 `json:"id"`
	LatestCommit string                 `json:"latestCommit,omitempty"`
	Repository   bitbucketServerRepoRef `json:"repository"`
}

func newBitbucketServerRef(r Repo, branch string) bitbucketServerRef {
	ref := bitbucketServerRef{ID: "refs/heads/" + branch}
	ref.Repository.Slug = r.Name
	ref.Repository.Project.Key = r.Owner
	return ref
}

// is reports whether ref is in r.
func (ref *bitbucketServerRef) is(r Repo) bool {
	return strings.EqualFold(ref.Repository.Project.Key, r.Owner) && strings.EqualFold(ref.Repository.Slug, r.Name)
}

type bitbucketServerReviewer struct {
	User struct {
		Name string `json:"name"`
	} `json:"user"`
}

type bitbucketServerPull struct {
	ID          int                       `json:"id"`
	Version     int                       `json:"version"`
	Title       string                    `json:"title"`
	Description string                    `json:"description"`
	State       string                    `json:"state"` // OPEN, DECLINED, MERGED
	Draft       *bool                     `json:"draft"`
	FromRef     bitbucketServerRef        `json:"fromRef"`
	ToRef       bitbucketServerRef        `json:"toRef"`
	Reviewers   []bitbucketServerReviewer `json:"reviewers"`
	Properties  struct {
		// MergeCommit is missing when the pull request was merged
		// by a push to its target rather than through Bitbucket.
		MergeCommit struct {
			ID string `json:"id"`
		} `json:"mergeCommit"`
	} `json:"properties"`
	Links struct {
		Self []struct {
			Href string `json:"href"`
		} `json:"self"`
	} `json:"links"`
}

func (p *bitbucketServerPull) pullRequest() *PullRequest {
	pr := &PullRequest{Number: p.ID, Head: strings.TrimPrefix(p.FromRef.ID, "refs/heads/"), Base: strings.TrimPrefix(p.ToRef.ID, "refs/heads/"),
		HeadSHA: p.FromRef.LatestCommit, State: Open, Title: p.Title, Body: p.Description}
	if len(p.Links.Self) > 0 {
		pr.URL = p.Links.Self[0].Href
	}
	switch p.State {
	case "MERGED":
		pr.State, pr.MergeCommit = Merged, p.Properties.MergeCommit.ID
	case "DECLINED":
		pr.State = Closed
	}
	return pr
}

func bitbucketServerPath(r Repo) string {
	return "/projects/" + url.PathEscape(r.Owner) + "/repos/" + url.PathEscape(r.Name) + "/pull-requests"
}

func bitbucketServerPullPath(r Repo, number int) string {
	return bitbucketServerPath(r) + "/" + strconv.Itoa(number)
}

// Find implements Forge: the pull requests going out of head in this
// repository, kept when they go into base in this same repository (not
// into a fork's upstream, not from a fork).
func (b *BitbucketServer) Find(ctx context.Context, r Repo, head, base string) (*PullRequest, error) {
	start := 0
	for range bitbucketMaxPages {
		q := url.Values{"state": {"OPEN"}, "at": {"refs/heads/" + head}, "direction": {"OUTGOING"},
			"limit": {strconv.Itoa(bitbucketPageSize)}, "start": {strconv.Itoa(start)}}
		var page struct {
			Values        []bitbucketServerPull `json:"values"`
			IsLastPage    bool                  `json:"isLastPage"`
			NextPageStart int                   `json:"nextPageStart"`
		}
		if err := b.c.call(ctx, r, http.MethodGet, bitbucketServerPath(r)+"?"+q.Encode(), nil, &page); err != nil {
			return nil, err
		}
		for i := range page.Values {
			p := &page.Values[i]
			if p.State == "OPEN" && p.FromRef.ID == "refs/heads/"+head && p.ToRef.ID == "refs/heads/"+base && p.FromRef.is(r) && p.ToRef.is(r) {
				return p.pullRequest(), nil
			}
		}
		if page.IsLastPage || page.NextPageStart <= start {
			return nil, nil
		}
		start = page.NextPageStart
	}
	return nil, fmt.Errorf("forge %s: more than %d open pull requests from %s", r, bitbucketPageSize*bitbucketMaxPages, head)
}

// Get implements Forge.
func (b *BitbucketServer) Get(ctx context.Context, r Repo, number int) (*PullRequest, error) {
	p, err := b.get(ctx, r, number)
	if err != nil {
		return nil, err
	}
	return p.pullRequest(), nil
}

func (b *BitbucketServer) get(ctx context.Context, r Repo, number int) (*bitbucketServerPull, error) {
	var p bitbucketServerPull
	if err := b.c.call(ctx, r, http.MethodGet, bitbucketServerPullPath(r, number), nil, &p); err != nil {
		return nil, err
	}
	return &p, nil
}

// Open implements Forge; see BitbucketServer for what it makes of p.
func (b *BitbucketServer) Open(ctx context.Context, r Repo, p Proposal) (*PullRequest, error) {
	in := struct {
		Title       string                    `json:"title"`
		Description string                    `json:"description"`
		FromRef     bitbucketServerRef        `json:"fromRef"`
		ToRef       bitbucketServerRef        `json:"toRef"`
		Reviewers   []bitbucketServerReviewer `json:"reviewers,omitempty"`
		Draft       bool                      `json:"draft,omitempty"`
	}{Title: p.Title, Description: p.Body, FromRef: newBitbucketServerRef(r, p.Head), ToRef: newBitbucketServerRef(r, p.Base), Draft: p.Draft}
	for _, name := range p.Reviewers {
		var rv bitbucketServerReviewer
		rv.User.Name = name
		in.Reviewers = append(in.Reviewers, rv)
	}
	var out bitbucketServerPull
	if err := b.c.call(ctx, r, http.MethodPost, bitbucketServerPath(r), in, &out); err != nil {
		return nil, err
	}
	pr := out.pullRequest()
	if !p.AutoMerge {
		return pr, nil
	}
	am := struct {
		AutoMerge bool `json:"autoMerge"`
		Version   int  `json:"version"`
	}{true, out.Version}
	var merged bitbucketServerPull
	path := bitbucketServerPullPath(r, out.ID) + "/merge?version=" + strconv.Itoa(out.Version)
	if err := b.c.call(ctx, r, http.MethodPost, path, am, &merged); err != nil {
		return pr, fmt.Errorf("pull request #%d opened, auto-merge not set: %w", pr.Number, err)
	}
	if merged.ID == out.ID {
		pr = merged.pullRequest() // merged already when nothing held it
	}
	return pr, nil
}

// Edit implements Forge. An update names the version it changes, and
// replaces the reviewers with the list it carries: both are read first.
func (b *BitbucketServer) Edit(ctx context.Context, r Repo, number int, title, body string) (*PullRequest, error) {
	cur, err := b.get(ctx, r, number)
	if err != nil {
		return nil, err
	}
	in := struct {
		Version     int                       `json:"version"`
		Title       string                    `json:"title"`
		Description string                    `json:"description"`
		Reviewers   []bitbucketServerReviewer `json:"reviewers"`
		Draft       *bool                     `json:"draft,omitempty"`
	}{Version: cur.Version, Title: title, Description: body, Reviewers: cur.Reviewers, Draft: cur.Draft}
	if in.Reviewers == nil {
		in.Reviewers = []bitbucketServerReviewer{}
	}
	var out bitbucketServerPull
	if err := b.c.call(ctx, r, http.MethodPut, bitbucketServerPullPath(r, number), in, &out); err != nil {
		return nil, err
	}
	return out.pullRequest(), nil
}

// Close implements Forge: a comment, then a decline of the version read
// after it.
func (b *BitbucketServer) Close(ctx context.Context, r Repo, number int, comment string) error {
	if comment != "" {
		in := struct {
			Text string `json:"text"`
		}{comment}
		if err := b.c.call(ctx, r, http.MethodPost, bitbucketServerPullPath(r, number)+"/comments", in, nil); err != nil {
			return err
		}
	}
	cur, err := b.get(ctx, r, number)
	if err != nil {
		return err
	}
	in := struct {
		Version int `json:"version"`
	}{cur.Version}
	path := bitbucketServerPullPath(r, number) + "/decline?version=" + strconv.Itoa(cur.Version)
	return b.c.call(ctx, r, http.MethodPost, path, in, nil)
}
