// Package kube writes image changes into Argo CD Applications (the "argocd"
// write-back method): a JSON patch of only the fields crowsnest owns,
// spec.source.kustomize.images and spec.source.helm.parameters (and the same
// inside spec.sources[i]), computed from the object as read and guarded by its
// resourceVersion, re-read and retried on conflict. Other writers' fields and
// entries survive; nothing else in the spec is ever sent.
package kube
