// Package configcmd is `crowsnest config validate`: it checks config files
// (and argocd-notifications-cm manifests) as `run` checks them at start
// and on reload (config's strict parser, then setup.CheckConfig, the same
// function run calls), and prints every problem with its file:line and
// field path. cmd/crowsnest adds the command to its root.
package configcmd
