// Package localkube is local mode's Kubernetes (`crowsnest run
// --apps-dir`): Applications read from files have no cluster to be
// written to, so Kubernetes-mode write-backs patch an in-memory copy of
// each one (Apps, made from its file on first write, through the same
// kube.Writer as in a cluster). The files themselves are never modified.
// It knows Applications by namespace and name only and imports neither
// the engine nor the daemon's assembly.
package localkube
