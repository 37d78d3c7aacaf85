// Package gitplan maps an Application's decided image changes to what a Git
// write-back writes: one Change per source written (a multi-source
// Application's images may live in several), with the repository, the
// branch (the git-branch annotation's or the source's targetRevision,
// "base:target" for a write branch), the target file ($ref/ Helm values
// files of a chart from a Helm repository resolve to their ref source) and
// the images. It is a pure function of the Application, its Spec and the
// changes, beside controller/imageupdate's decisions, and links no Git: the
// controller turns a Change into writeback/git's.
package gitplan
