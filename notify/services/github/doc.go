// Package github is the `github` notification service: commit statuses,
// deployments, pull request comments, check runs and repository dispatch
// events on the repository and revision of the Application, as Argo CD
// Notifications does them (go-github's media types and order). It
// authenticates as a GitHub App installation (an RS256 JWT exchanged for
// an installation token, renewed when it expires or is refused) or with a
// token. Package services lists its Kind; it sends through svc.Client.
// Kind.Repository (repository.go) names the repository a rendered message
// acts on, so that the notifier can refuse one the Application may not
// use: the repository comes from the Application, the credentials are
// the operator's.
package github
