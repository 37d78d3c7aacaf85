// Package imageupdate owns what crowsnest updates in an Application and how
// it decides: the internal model (images with their policies, where to write
// them back), the reader of argocd-image-updater's annotations that fills it,
// and the pure decision that turns an Application, selection results and the
// window state into a plan of changes or a reason to skip or hold. It does no
// I/O; the engine brings the facts and carries the plan out.
package imageupdate
