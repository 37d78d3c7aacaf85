// Package forge is crowsnest's client of the forges' pull-request APIs:
// find the open pull request from a head branch into a base branch, open
// one, edit its title and body, read its state (open, closed, merged and
// the merge commit) and close it with a comment. Each forge is a Forge
// over one shared HTTP client: Gitea and Forgejo (gitea.go), GitHub and
// GitHub Enterprise Server with a token or as a GitHub App installation
// (github.go; auto-merge over GraphQL, githubmerge.go), GitLab (gitlab.go);
// repo.go reads a repository URL into the Repo of GitHub or GitLab. The
// client puts a context and a timeout on every request, answers a 429 or
// a secondary rate limit with a *RateLimitError carrying the wait the
// forge asked for, makes 4xx other than those permanent, and keeps every
// credential out of errors. What it sends is checked against the
// official Go clients of GitHub and GitLab (the conformance tests).
// Which repository and branches a pull request is for, and what it says,
// is decided above it (writeback/git/collect); this package only speaks
// the forges' APIs.
package forge
