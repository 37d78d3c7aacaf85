// Package journal keeps crowsnest's write intents: before the image
// reconciler writes an update (a Kubernetes patch or a Git commit) it
// records what it is about to write, one Intent per Application key, so a
// process that crashes (or a leader killed) between the write and the
// notifier recording its announcement lets the next process find the write
// and announce it again under the same event ID. It owns only the storage:
// ConfigMaps sharded over internal/cmbatch in crowsnest's namespace
// (Kubernetes mode) or one JSON file (local mode, no cluster). What is
// recorded when, and what a recovered intent means, is the controller's
// image reconciler's (controller/writejournal.go); the Git batcher
// (writeback/git/collect) tells it when a Git write was announced, and it
// marks the intent Done here.
package journal
