// Package testenv runs a real Kubernetes control plane for crowsnest's tests:
// an etcd and a kube-apiserver process on 127.0.0.1 with free ports, generated
// certificates and a static admin token, and Argo CD's own CRDs for
// Applications and AppProjects (argoproj.io/v1alpha1, release ArgoCDVersion,
// read from the Go module cache) installed, so the apiserver checks every
// object and patch against Argo CD's schema as a real cluster does. The
// binaries are built from the Go module proxy by hack/kube/build.sh and
// cached; the package runs that script itself, so `go test` works on a fresh
// machine.
package testenv
