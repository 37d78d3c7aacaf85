package forge

import (
	"context"
	"errors"
	"fmt"
	"time"

	textredact "github.com/crowsnest-dev/crowsnest/internal/redact"
)

// Repo is a repository on a forge, as its API names it.
type Repo struct {
	// API is the forge's API base URL, without a trailing slash
	// ("https://gitea.example.com/api/v1").
	API string
	// Owner is the user or organisation, Name the repository.
	Owner, Name string
}

// String names the repository in errors and logs: its API host and path,
// never a credential.
func (r Repo) String() string { return textredact.URL(r.API) + " " + r.Owner + "/" + r.Name }

// State is where a pull request stands.
type State string

// The states crowsnest tells apart.
const (
	Open   State = "open"
	Closed State = "closed" // closed without merging
	Merged State = "merged"
)

// PullRequest is a pull (or merge) request as the forge reports it.
type PullRequest struct {
	// Number is the pull request's number in its repository (a GitLab
	// merge request's IID).
	Number int
	// URL is the pull request's page, for people and notifications.
	URL        string
	Head, Base string
	// HeadSHA is the head branch's commit the forge sees.
	HeadSHA string
	State   State
	// MergeCommit is the commit a merge made on the base branch, "" until
	// merged.
	MergeCommit string
	Title, Body string
	Labels      []string
}

// Proposal is the pull request crowsnest asks for.
type Proposal struct {
	// Head is the branch with the change, Base the branch it is for.
	Head, Base  string
	Title, Body string
	// Labels are added by name; a label the repository does not have is
	// left out (Gitea) or created by the forge (GitHub, GitLab) rather
	// than failing the pull request.
	Labels []string
	// Reviewers and Assignees are user names on the forge (GitLab's
	// client looks up their user IDs).
	Reviewers, Assignees []string
	// Draft opens the pull request as a draft (on Gitea, a "WIP: " title
	// prefix; on GitLab, "Draft: ").
	Draft bool
	// AutoMerge asks the forge to merge the pull request by itself once
	// its required checks and approvals are in.
	AutoMerge bool
}

// Forge is one forge's pull-request API.
type Forge interface {
	// Find returns the open pull request from head into base, nil when
	// there is none.
	Find(ctx context.Context, r Repo, head, base string) (*PullRequest, error)
	// Get returns pull request number, in whatever state.
	Get(ctx context.Context, r Repo, number int) (*PullRequest, error)
	// Open opens p. When the pull request was opened but a step after
	// it failed (labels, reviewers or assignees where the forge takes
	// them apart, auto-merge), it returns the pull request and the error.
	Open(ctx context.Context, r Repo, p Proposal) (*PullRequest, error)
	// Edit replaces the title and body of pull request number.
	Edit(ctx context.Context, r Repo, number int, title, body string) (*PullRequest, error)
	// Close comments on pull request number (when comment is not empty)
	// and closes it without merging.
	Close(ctx context.Context, r Repo, number int, comment string) error
}

// ProposalChecker is a Forge that refuses some proposals whatever the
// forge would answer (a setting its API cannot carry): Check says so
// before anything is pushed, with the error Open would return.
type ProposalChecker interface {
	Check(r Repo, p Proposal) error
}

// RateLimitError is a forge's answer that asks for a wait (429, or 403
// with a secondary rate limit): the work is kept and tried again after
// RetryAfter.
type RateLimitError struct {
	Repo       string
	RetryAfter time.Duration
}

func (e *RateLimitError) Error() string {
	return fmt.Sprintf("forge %s: rate limited, retry after %s", e.Repo, e.RetryAfter)
}

// PermanentError is an answer retrying cannot change (a 4xx other than
// 408 and 429: no permission, no such repository, a refused proposal).
type PermanentError struct{ Err error }

func (e *PermanentError) Error() string { return e.Err.Error() }
func (e *PermanentError) Unwrap() error { return e.Err }

// IsPermanent reports whether err is a PermanentError.
func IsPermanent(err error) bool {
	var p *PermanentError
	return errors.As(err, &p)
}

// DefaultBodyLimit is the longest pull request body, in characters, sent
// to a forge that states no smaller limit: GitHub's.
const DefaultBodyLimit = 65536

// bodyLimiter is a forge whose pull request bodies are shorter than
// DefaultBodyLimit.
type bodyLimiter interface{ bodyLimit() int }

// BodyLimit is the longest pull request body f takes, in characters.
func BodyLimit(f Forge) int {
	if l, ok := f.(bodyLimiter); ok {
		return l.bodyLimit()
	}
	return DefaultBodyLimit
}
