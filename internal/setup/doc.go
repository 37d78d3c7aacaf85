// Package setup builds the daemon's parts that more than one crowsnest
// command builds from a config: the registry side (clients, credentials,
// poller), the Git writer, the kube client config, the
// one-pass read of an apps folder, and CheckConfig, the check a config
// passes before `run` starts with it. The daemon (internal/daemon), `config validate`, `test`,
// `windows` and `migrate` (internal/migrate) call the same
// constructors, so what they report is what the daemon does. It sits
// below cmd/crowsnest and the daemon's assembly, and imports only the
// library packages (controller, registry, writeback, watcher, config).
package setup
