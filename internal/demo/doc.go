// Package demo is `crowsnest demo` without its command: an OCI registry
// (go-containerregistry's, in memory), a Git repository and a webhook
// receiver on 127.0.0.1, the Applications and config of examples/demo
// pointed at them, and the daemon (internal/daemon) run on them in local
// mode; a newer image pushed midway; and the Report of what happened.
// cmd/crowsnest keeps the flags and prints the Report.
package demo
