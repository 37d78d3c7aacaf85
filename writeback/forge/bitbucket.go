package forge

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	textredact "github.com/crowsnest-dev/crowsnest/internal/redact"
	"github.com/crowsnest-dev/crowsnest/internal/repourl"
)

// BitbucketCloud is the pull-request API of Bitbucket Cloud (REST API
// 2.0, https://developer.atlassian.com/cloud/bitbucket/rest/api-group-pullrequests/).
// A Repo's API is BitbucketCloudAPI, its Owner the workspace and its Name
// the repository slug (BitbucketCloudRepo reads them from a clone URL).
//
// What it makes of a Proposal: Reviewers are accounts named the way the
// API names them, a UUID in braces ("{504c3b62-8120-4f0c-a7bc-87800b9d6f70}")
// or an Atlassian account ID ("557058:c0b1…"): Bitbucket Cloud no longer
// finds users by name. Labels and Assignees are left out, as Bitbucket
// pull requests have neither. Draft opens a draft. AutoMerge is refused
// before anything is opened (ErrAutoMergeUnsupported): the API cannot
// schedule a merge, and a pull request that was meant to merge itself
// but silently waits for a person would hold the update for good.
type BitbucketCloud struct{ c *client }

var _ Forge = (*BitbucketCloud)(nil)

// BitbucketCloudAPI is Bitbucket Cloud's API base URL.
const BitbucketCloudAPI = "https://api.bitbucket.org/2.0"

// ErrAutoMergeUnsupported is the refusal of a Proposal with AutoMerge by
// a forge whose API cannot merge a pull request by itself later.
var ErrAutoMergeUnsupported = errors.New("this forge's API cannot merge a pull request by itself once it may")

// NewBitbucketCloud returns the Bitbucket Cloud client. With a username
// it authenticates with HTTP Basic (an app password, or an Atlassian API
// token with the account's email as username); without one secret is a
// bearer token (a repository, project or workspace access token, or an
// OAuth access token).
func NewBitbucketCloud(username, secret string, o Options) *BitbucketCloud {
	return &BitbucketCloud{c: newClient(o, bitbucketAuth(username, secret), nil)}
}

// bitbucketAuth sets the credential both Bitbucket flavours take: HTTP
// Basic with a username, a bearer token without.
func bitbucketAuth(username, secret string) credential {
	if username == "" {
		return headerToken{"Authorization", "Bearer ", secret}
	}
	return basicAuth{username, secret}
}

// bitbucketPageSize is how many pull requests one list request asks for:
// Bitbucket Cloud's largest page. bitbucketMaxPages bounds a search, as
// on Gitea: far more open pull requests from one branch than any
// repository has.
const (
	bitbucketPageSize = 50
	bitbucketMaxPages = 20
)

// BitbucketCloudRepo maps a Bitbucket Cloud clone URL
// (https://bitbucket.org/WORKSPACE/REPO.git, with or without a user;
// git@bitbucket.org:WORKSPACE/REPO.git; ssh://git@bitbucket.org/WORKSPACE/REPO.git)
// to its Repo.
func BitbucketCloudRepo(repoURL string) (Repo, error) {
	u, ok := repourl.Parse(repoURL)
	parts, clean := u.Segments()
	if !ok || !clean || !strings.EqualFold(u.Host, "bitbucket.org") || len(parts) != 2 {
		return Repo{}, fmt.Errorf("%s is not a Bitbucket Cloud repository URL (bitbucket.org/WORKSPACE/REPO)", textredact.URL(repoURL))
	}
	return Repo{API: BitbucketCloudAPI, Owner: parts[0], Name: parts[1]}, nil
}

type bitbucketCloudEndpoint struct {
	Branch struct {
		Name string `json:"name"`
	} `json:"branch"`
	Commit struct {
		Hash string `json:"hash"`
	} `json:"commit"`
	Repository struct {
		FullName string `json:"full_name"`
	} `json:"repository"`
}

// bitbucketCloudAccount names a user: by UUID, or by Atlassian account
// ID.
type bitbucketCloudAccount struct {
	UUID      string `json:"uuid,omitempty"`
	AccountID string `json:"account_id,omitempty"`
}

type bitbucketCloudPull struct {
	ID          int    `json:"id"`
	Title       string `json:"title"`
	Description string `json:"description"`
	Summary     struct {
		Raw string `json:"raw"`
	} `json:"summary"`
	State       string                  `json:"state"` // OPEN, MERGED, DECLINED, SUPERSEDED
	Draft       *bool                   `json:"draft"`
	Source      bitbucketCloudEndpoint  `json:"source"`
	Destination bitbucketCloudEndpoint  `json:"destination"`
	Reviewers   []bitbucketCloudAccount `json:"reviewers"`
	MergeCommit *struct {
		Hash string `json:"hash"`
	} `json:"merge_commit"`
	Links struct {
		HTML struct {
			Href string `json:"href"`
		} `json:"html"`
	} `json:"links"`
}

// bitbucketCloudBranch is a pull request's source or destination in a
// request.
type bitbucketCloudBranch struct {
	Branch struct {
		Name string `json:"name"`
	} `json:"branch"`
}

func newBitbucketCloudBranch(name string) bitbucketCloudBranch {
	var b bitbucketCloudBranch
	b.Branch.Name = name
	return b
}

func bitbucketCloudPath(r Repo) string {
	return "/repositories/" + url.PathEscape(r.Owner) + "/" + url.PathEscape(r.Name)
}

func bitbucketCloudPullPath(r Repo, number int) string {
	return bitbucketCloudPath(r) + "/pullrequests/" + strconv.Itoa(number)
}

// pullRequest is p as crowsnest reads it, with whole commit IDs:
// Bitbucket Cloud names a pull request's commits by 12-character
// abbreviations, which would never equal the commit crowsnest pushed.
func (b *BitbucketCloud) pullRequest(ctx context.Context, r Repo, p *bitbucketCloudPull) (*PullRequest, error) {
	pr := &PullRequest{Number: p.ID, URL: p.Links.HTML.Href, Head: p.Source.Branch.Name, Base: p.Destination.Branch.Name,
		State: Open, Title: p.Title, Body: p.Summary.Raw}
	if pr.Body == "" {
		pr.Body = p.Description
	}
	var err error
	if pr.HeadSHA, err = b.fullHash(ctx, r, p.Source.Commit.Hash); err != nil {
		return nil, err
	}
	switch p.State {
	case "MERGED":
		pr.State = Merged
		if p.MergeCommit != nil {
			if pr.MergeCommit, err = b.fullHash(ctx, r, p.MergeCommit.Hash); err != nil {
				return nil, err
			}
		}
	case "DECLINED", "SUPERSEDED":
		pr.State = Closed
	}
	return pr, nil
}

// fullHash returns the whole ID of the commit hash abbreviates.
func (b *BitbucketCloud) fullHash(ctx context.Context, r Repo, hash string) (string, error) {
	if hash == "" || len(hash) >= 40 {
		return hash, nil
	}
	var c struct {
		Hash string `json:"hash"`
	}
	path := bitbucketCloudPath(r) + "/commit/" + url.PathEscape(hash) + "?fields=hash"
	if err := b.c.call(ctx, r, http.MethodGet, path, nil, &c); err != nil {
		return "", err
	}
	return c.Hash, nil
}

// bbqlString quotes s as a string in Bitbucket's query language.
func bbqlString(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"`
}

// Find implements Forge with one filtered query. A pull request into
// this repository from a fork's branch of the same name is not ours.
func (b *BitbucketCloud) Find(ctx context.Context, r Repo, head, base string) (*PullRequest, error) {
	q := "source.branch.name=" + bbqlString(head) + " AND destination.branch.name=" + bbqlString(base) + ` AND state="OPEN"`
	for page := 1; page <= bitbucketMaxPages; page++ {
		v := url.Values{"q": {q}, "pagelen": {strconv.Itoa(bitbucketPageSize)}, "page": {strconv.Itoa(page)}}
		var list struct {
			Values []bitbucketCloudPull `json:"values"`
			Next   string               `json:"next"`
		}
		if err := b.c.call(ctx, r, http.MethodGet, bitbucketCloudPath(r)+"/pullrequests?"+v.Encode(), nil, &list); err != nil {
			return nil, err
		}
		for i := range list.Values {
			p := &list.Values[i]
			if p.State == "OPEN" && p.Source.Branch.Name == head && p.Destination.Branch.Name == base &&
				strings.EqualFold(p.Source.Repository.FullName, p.Destination.Repository.FullName) {
				return b.pullRequest(ctx, r, p)
			}
		}
		if list.Next == "" {
			return nil, nil
		}
	}
	return nil, fmt.Errorf("forge %s: more than %d open pull requests from %s into %s", r, bitbucketPageSize*bitbucketMaxPages, head, base)
}

// Get implements Forge.
func (b *BitbucketCloud) Get(ctx context.Context, r Repo, number int) (*PullRequest, error) {
	p, err := b.get(ctx, r, number)
	if err != nil {
		return nil, err
	}
	return b.pullRequest(ctx, r, p)
}

func (b *BitbucketCloud) get(ctx context.Context, r Repo, number int) (*bitbucketCloudPull, error) {
	var p bitbucketCloudPull
	if err := b.c.call(ctx, r, http.MethodGet, bitbucketCloudPullPath(r, number), nil, &p); err != nil {
		return nil, err
	}
	return &p, nil
}

// Check implements ProposalChecker: auto-merge is refused.
func (b *BitbucketCloud) Check(r Repo, p Proposal) error {
	if p.AutoMerge {
		return &PermanentError{fmt.Errorf("forge %s: opening a pull request with auto-merge: %w", r, ErrAutoMergeUnsupported)}
	}
	return nil
}

// Open implements Forge; see BitbucketCloud for what it makes of p.
func (b *BitbucketCloud) Open(ctx context.Context, r Repo, p Proposal) (*PullRequest, error) {
	if err := b.Check(r, p); err != nil {
		return nil, err
	}
	in := struct {
		Title       string                  `json:"title"`
		Description string                  `json:"description"`
		Source      bitbucketCloudBranch    `json:"source"`
		Destination bitbucketCloudBranch    `json:"destination"`
		Reviewers   []bitbucketCloudAccount `json:"reviewers,omitempty"`
		Draft       bool                    `json:"draft,omitempty"`
	}{Title: p.Title, Description: p.Body, Source: newBitbucketCloudBranch(p.Head), Destination: newBitbucketCloudBranch(p.Base), Draft: p.Draft}
	for _, name := range p.Reviewers {
		if strings.HasPrefix(name, "{") {
			in.Reviewers = append(in.Reviewers, bitbucketCloudAccount{UUID: name})
		} else {
			in.Reviewers = append(in.Reviewers, bitbucketCloudAccount{AccountID: name})
		}
	}
	var out bitbucketCloudPull
	if err := b.c.call(ctx, r, http.MethodPost, bitbucketCloudPath(r)+"/pullrequests", in, &out); err != nil {
		return nil, err
	}
	return b.pullRequest(ctx, r, &out)
}

// Edit implements Forge. The reviewers and the draft flag are read first
// and sent back as they are: reports disagree on whether an update keeps
// what its body leaves out, and sending them is right either way.
func (b *BitbucketCloud) Edit(ctx context.Context, r Repo, number int, title, body string) (*PullRequest, error) {
	cur, err := b.get(ctx, r, number)
	if err != nil {
		return nil, err
	}
	in := struct {
		Title       string                  `json:"title"`
		Description string                  `json:"description"`
		Reviewers   []bitbucketCloudAccount `json:"reviewers,omitempty"`
		Draft       *bool                   `json:"draft,omitempty"`
	}{Title: title, Description: body, Draft: cur.Draft}
	in.Reviewers = cur.Reviewers
	var out bitbucketCloudPull
	if err := b.c.call(ctx, r, http.MethodPut, bitbucketCloudPullPath(r, number), in, &out); err != nil {
		return nil, err
	}
	return b.pullRequest(ctx, r, &out)
}

// Close implements Forge: a comment, then a decline (which takes no
// message on Bitbucket Cloud).
func (b *BitbucketCloud) Close(ctx context.Context, r Repo, number int, comment string) error {
	if comment != "" {
		in := struct {
			Content struct {
				Raw string `json:"raw"`
			} `json:"content"`
		}{}
		in.Content.Raw = comment
		if err := b.c.call(ctx, r, http.MethodPost, bitbucketCloudPullPath(r, number)+"/comments", in, nil); err != nil {
			return err
		}
	}
	return b.c.call(ctx, r, http.MethodPost, bitbucketCloudPullPath(r, number)+"/decline", nil, nil)
}
