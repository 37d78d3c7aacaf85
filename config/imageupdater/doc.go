// Package imageupdater reads argocd-image-updater 1.x's ImageUpdater
// custom resources (argocd-image-updater.argoproj.io/v1alpha1) and
// translates each into crowsnest's image-policy model (config.PolicyImage,
// config.PolicyWriteBack): one Rule per applicationRef, the settings of
// the spec, applicationRef and image levels merged as argocd-image-updater
// merges them, every problem naming the resource's field. It is an input
// beside crowsnest's config file, not part of it; controller/imageupdaters
// watches the resources and compiles the rules, and `crowsnest migrate`
// reports on them.
package imageupdater
