// Package forge is crowsnest's client of the forges' pull-request APIs:
// find the open pull request from a head branch into a base branch, open
// one, edit its title and body, read its state (open, closed, merged and
// the merge commit) and close it with a comment. Each forge is a Forge
// over one shared HTTP client: Gitea and Forgejo (gitea.go), GitHub and
// GitHub Enterprise Server with a token or as a GitHub App installation
// (github.go; auto-merge over GraphQL, githubmerge.go), GitLab (gitlab.go),
// Bitbucket Cloud (bitbucket.go), Bitbucket Data Center (bitbucketserver.go)
// and Azure DevOps Services and Server (azure.go). The client puts a
// context and a timeout on every request, answers a 429 or a secondary
// rate limit with a *RateLimitError carrying the wait the forge asked for,
// makes 4xx other than those permanent, and keeps every credential out of
// errors. A forge's type says what it makes of what a Proposal asks and
// its pull requests cannot carry (labels, assignees, a draft,
// auto-merge); each forge's Repo function maps a clone URL to the Repo
// its API names, and Resolver picks the forge of a repository URL from
// the operator's hosts. What GitHub's and GitLab's clients send is
// checked against their official Go clients (the conformance tests).
// Which repository and branches a pull request is for, and what it says,
// is decided above it (writeback/git's pull-request mode); this package
// only speaks the forges' APIs.
package forge
