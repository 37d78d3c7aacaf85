// Package collect gathers the Git write-backs that many reconciles decide
// within a short window (Batcher.Delay, held open while the engine is
// still deciding) and hands them to writeback/git's Writer as one Apply,
// which makes one commit per repository and branch. It then reports each
// Application's own outcome, by its namespace/name key: an Event and an
// announcement per write (Listener.GitWritten), a metric, a retry for a failure, and
// the journal hooks that settle the write intents (writeback/journal).
// It knows Applications by key and changes as writeback/git's types only:
// the controller looks the Application up and turns an announcement into
// a notification, so this package needs neither the watcher nor triggers.
//
// It is not writeback/git's own batch (session.go there): that is the
// work on one clone for one repository and branch (fetch, edit, commit,
// push with retries); this is the window before it, across repositories,
// between the controller's image reconciler and the writer.
package collect
