// Package controller is crowsnest's sync engine and its reconcilers.
//
// The Engine (engine.go, queue.go, leader.go, health.go) turns every event
// source into one rate-limited work queue keyed by "namespace/name":
// Application and AppProject changes from the watcher, registry tag
// changes from the poller and registry webhooks (repointerests.go,
// tagwait.go), sync-window boundaries (windowtimer.go) and config reloads.
// It runs one reconcile per key at a time on a configurable number of
// workers, tracks the first pass over the Applications known at start,
// elects a leader with a coordination.k8s.io Lease so only one replica
// acts, and reports its state through Prometheus metrics and the health
// endpoints.
//
// The reconcilers it drives: image updates (images.go, with the pure
// decisions in controller/imageupdate, Git batching in gitbatch.go,
// repository credentials in gitcreds.go and the write journal in
// writejournal.go), sync windows (windows.go, windowsource.go), tenancy
// checks (tenancy.go) and notifications (notifywiring.go: the engine's
// sources, projects and lease handed to notify/pipeline's Notifier, which
// evaluates triggers on every observed transition).
//
// docs/operations.md lists the metrics and how the engine runs; the
// reference for users is in docs/.
package controller
