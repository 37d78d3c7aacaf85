// Package configcmd is `crowsnest config validate`: it checks config files
// (and argocd-notifications-cm manifests) with internal/configcheck, which
// checks them as `run` does at start and on reload, and prints every
// problem with its file:line and field path. cmd/crowsnest adds the
// command to its root.
package configcmd
