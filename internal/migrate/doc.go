// Package migrate is the analysis behind `crowsnest migrate`: it reads an
// installation of argocd-image-updater and Argo CD Notifications (a folder
// of manifests or a cluster, read-only) and reports, with the readers and
// constructors the daemon itself runs (config, controller/imageupdate,
// controller/imageupdaters, triggers, windows and internal/setup), what
// crowsnest would do per Application, what it reads
// differently, what it cannot do, and the Helm install and RBAC that carry
// the installation over. The cobra command, its flags and exit codes stay
// in cmd/crowsnest (migrate.go); notification services are built with
// run's builder (setup.BuildServices).
package migrate
