// Package journal keeps crowsnest's write intents: before the image
// reconciler writes an update (a Kubernetes patch or a Git commit) it
// records what it is about to write, one Intent per Application key, so a
// process that crashes (or a leader killed) between the write and the
// notifier recording its announcement lets the next process find the write
// and announce it again under the same event ID. It owns the storage
// (ConfigMaps sharded over internal/cmbatch in crowsnest's namespace in
// Kubernetes mode, one JSON file in local mode) and a process's Book of
// it: loaded once, written through, each previous intent given once, Git
// ones kept until a batch says whether they were written, and settled
// (Done). What is recorded when, and what a recovered intent means, is
// the controller's image reconciler's (controller/writejournal.go); the
// Git batcher (writeback/git/collect) tells it when a Git write was
// announced, and it settles the intent here.
package journal
