// Package watcher owns where Argo CD Applications and AppProjects come from.
// The kube source runs dynamic shared informers against the kube-apiserver;
// the file source reads the same objects from YAML files in a folder (local
// mode, demos, CI pipelines). Both trim objects to the fields crowsnest reads,
// drop updates that change nothing crowsnest reads (Argo CD's status churn),
// and hand the same events to a Handler. It owns no business logic.
package watcher
