// Package daemon is crowsnest's daemon as a library: Options (what
// `crowsnest run`'s flags say, as plain values; argocd-image-updater's
// `run` flags are applied to them with ImageUpdaterFlags), New, which
// builds every part from them and the config through constructor
// arguments (the sync engine and its Application sources, registries,
// the image reconciler and window timer, the write-backs of local or
// cluster mode, the notifier and outbox, leader election, config reload,
// the HTTP servers), and Daemon.Run, which runs them until the context
// ends. A program that runs it sees what it does through an Observer of
// its Events and the Daemon's methods, never through hooks in its parts.
// Only cmd/crowsnest builds it (a depguard rule checks it).
package daemon
