// Package repocreds finds the credentials writeback/git pushes with the
// way Argo CD finds its own: from the `repository` and `repo-creds`
// Secrets in Argo CD's namespace (exact URL first, else the longest
// prefix on the same host), or from a Secret an Application names
// (git:secret:<ns>/<name>), and for SSH the host keys of Argo CD's
// argocd-ssh-known-hosts-cm plus a known_hosts file. It implements
// writeback/git's CredentialsSource; the Git writer asks it once per
// repository and branch batch, and the commit-metadata reader of the
// notifications asks it too.
package repocreds
