// Package configcheck is what `crowsnest config validate` finds, without
// its command: every problem of a crowsnest config file, as `run` checks
// it at start and on reload (config's strict parser, then
// setup.CheckConfig, the same function run calls), or of an
// argocd-notifications-cm manifest (what the daemon rejects, its triggers
// and templates, and what crowsnest cannot send), each with the field
// path and the line in the file where it can be located. It takes a path
// and returns config.FieldErrors; how they are printed stays in
// cmd/crowsnest/internal/configcmd.
package configcheck
