// Package collect gathers the Git write-backs that many reconciles decide
// within a short window (Batcher.Delay, held open while the engine is
// still deciding) into batches (Batcher.Next) and writes each as one
// Apply of writeback/git's Writer (Batcher.Write), which makes one commit
// per repository and branch. It returns each Application's own Outcome,
// attributed by its namespace/name key; the controller's image reconciler
// drives it (controller.ImageReconciler.RunGit) and reports the outcomes
// (Events, announcements, metrics, retries, the write intents settled).
// It never calls the controller, and knows Applications by key and
// changes as writeback/git's types only.
//
// It is not writeback/git's own batch (session.go there): that is the
// work on one clone for one repository and branch (fetch, edit, commit,
// push with retries); this is the window before it, across repositories,
// between the controller's image reconciler and the writer.
package collect
