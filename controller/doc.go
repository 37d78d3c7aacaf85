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
// The reconcilers it drives: image updates (images.go with the files of
// its jobs: imagespec.go, imageselect.go, imagehold.go, imageinterest.go,
// imagenotify.go, imagesaid.go, imagewrite.go; then dryrun.go,
// gitchange.go, gitscope.go and writejournal.go, with the pure decisions
// in controller/imageupdate, the Git-change mapping in controller/gitplan,
// tenancy rules in controller/tenancy, the dry
// run's report in controller/dryrun, Git batching in
// writeback/git/collect and the write journal's storage and book in
// writeback/journal) and sync windows (windowtimer.go, windowsource.go,
// windows.go). Notifications run beside the engine in notify/pipeline;
// argoproject.go (EngineView) shows it the engine's sources and
// projects, notifywiring.go runs it while leading.
// Events go through internal/kubeevents (kubeevents.Redact).
//
// docs/architecture.md follows one image update and one notification
// through the packages, file by file.
//
// docs/operations.md lists the metrics and how the engine runs; the
// reference for users is in docs/.
package controller
