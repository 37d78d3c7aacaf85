// Package imageupdaters reads argocd-image-updater 1.x's ImageUpdater
// custom resources and feeds them to the image engine, each image read by
// the reader the annotations go through (imageupdate.ReadImage) from the
// resource's values: it watches them (when the apiserver serves them),
// compiles each into rules with every problem naming the resource's field,
// answers the image reconciler's question "what do ImageUpdaters say to
// update in this Application" (tenancy rules for annotations included), and
// writes each resource's status (Applications matched, images managed, and
// argocd-image-updater's conditions).
package imageupdaters
