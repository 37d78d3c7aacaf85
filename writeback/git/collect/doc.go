// Package collect gathers the Git write-backs that many reconciles decide
// into batches (Batcher.Next) by group commit per repository: a change
// for a repository nothing is being written to goes out as soon as the
// engine has settled (Batcher.Engine, at most Batcher.MaxDelay), and the
// changes that arrive while a repository's batch is in flight go together
// in its next batch. Each batch is one Apply of writeback/git's Writer
// (Batcher.Write), which makes one commit per repository and branch;
// batches for different repositories are written at once. It returns
// each Application's own Outcome, attributed by its namespace/name key;
// the controller's image reconciler drives it
// (controller.ImageReconciler.RunGit) and reports the outcomes (Events,
// announcements, metrics, retries, the write intents settled). It never
// calls the controller, and knows Applications by key and changes as
// writeback/git's types only.
//
// It is not writeback/git's own batch (session.go there): that is the
// work on one clone for one repository and branch (fetch, edit, commit,
// push with retries); this is the queue before it, per repository,
// between the controller's image reconciler and the writer.
package collect
