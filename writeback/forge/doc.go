// Package forge is crowsnest's client of the forges' pull-request APIs:
// find the open pull request from a head branch into a base branch, open
// one, edit its title and body, read its state (open, closed, merged and
// the merge commit) and close it with a comment. Each forge (Gitea and
// Forgejo; Bitbucket Cloud; Bitbucket Data Center; Azure DevOps Services
// and Server) is a Forge over one shared HTTP client: a context and a
// timeout on every request, a 429 or a secondary rate limit answered with
// a *RateLimitError carrying the wait the forge asked for, 4xx other than
// those permanent, and no credential in any error. A forge's type says
// what it makes of what a Proposal asks and its pull requests cannot
// carry (labels, assignees, a draft, auto-merge), and its Repo function
// maps a clone URL to the Repo its API names; Resolver picks the forge of
// a repository URL from the operator's hosts. Which repository and
// branches a pull request is for, and what it says, is decided above it
// (writeback/git's pull-request mode); this package only speaks the
// forges' APIs.
package forge
