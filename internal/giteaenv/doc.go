// Package giteaenv runs a real Gitea for crowsnest's tests: its HTTP API
// and Git over HTTP on 127.0.0.1 with a free port, a SQLite database and
// repositories in a temporary folder, an admin user with an access token,
// and nothing that reaches out (offline mode, no mailer, no avatars, no
// update checker, no SSH, no LFS, no Actions). Tests create repositories
// through it, push to them with the git CLI and drive pull requests with
// Gitea's Go client (code.gitea.io/sdk/gitea).
//
// The binary comes from hack/gitea/build.sh, built from the Go module
// proxy once and cached; the package runs that script itself, so `go test`
// works on a fresh machine (and waits for `make test`'s background build).
// With CROWSNEST_GITEA_BUILD=0 it does not build: a test that needs Gitea
// is skipped when it is not built yet, except under CI=true, where it
// fails. CROWSNEST_GITEA_BIN names a folder with a build to use instead.
package giteaenv
