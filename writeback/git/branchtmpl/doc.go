// Package branchtmpl compiles and renders the templated target branch of
// a "base:target" write-back branch (argocd-image-updater's git-branch
// annotation, `{{.SHA256}}`, `{{range .Images}}...{{end}}`). Such a
// template is written by whoever may edit an Application, so Parse holds
// it to limits that keep every render to microseconds and Render caps its
// output. The annotation reader validates with it at load and
// writeback/git renders with it at write time; it imports neither Git
// nor any other I/O.
package branchtmpl
