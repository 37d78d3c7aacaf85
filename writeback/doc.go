// Package writeback is the family of packages that apply a chosen image
// update where Argo CD will pick it up. Each method lives in its own leaf
// package with no dependency on the engine: writeback/git edits
// .argocd-source-<app>.yaml, kustomization.yaml or Helm values files in a
// persistent clone, one commit per repository and branch per batch, and
// pushes with fetch-and-reapply retries; the Kubernetes method
// (writeback/kube) patches only the Application fields crowsnest owns.
// Every method reports a structured result (what changed, where, which
// commit) for events, notifications and tests. Around the Git method,
// writeback/git/collect gathers many reconciles' changes into one write
// and reports each Application's outcome, and writeback/git/repocreds
// finds the credentials the way Argo CD does; writeback/journal keeps
// the write intents that let a restarted process announce a write its
// predecessor made but did not live to announce.
package writeback
