// Command kube-controller-manager is a thin wrapper that builds the
// Kubernetes controller manager from the Go module proxy for crowsnest's
// Argo CD end-to-end tests (internal/argocdenv): its deployment and
// replicaset controllers turn the Deployments Argo CD applies into
// ReplicaSets and Pods, whose images Argo CD reports in an Application's
// status.summary.images. No kubelet runs, so the Pods stay Pending. See
// ../build.sh.
package main

import (
	"os"

	"k8s.io/component-base/cli"
	"k8s.io/kubernetes/cmd/kube-controller-manager/app"
)

func main() {
	os.Exit(cli.Run(app.NewControllerManagerCommand()))
}
