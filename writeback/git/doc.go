// Package git writes image updates back to Git repositories with go-git.
// It owns a bounded cache of persistent clones (one per repository URL,
// fetched, never re-cloned unless corrupt), the edits of the three
// write-back targets (.argocd-source-<app>.yaml, kustomization.yaml and
// Helm values) that change only the values crowsnest owns and keep every
// comment and byte of formatting around them, batching of all changes for
// one repository and branch into one commit, and pushing without force:
// a rejected push is retried by fetching the new head and re-applying the
// same edits, so no update is lost, applied twice, or committed empty.
// A change may instead be proposed for review (Change.PullRequest): it is
// committed on a head branch of crowsnest's own, and the pull request from
// it into the base is opened or kept up to date through writeback/forge.
package git
