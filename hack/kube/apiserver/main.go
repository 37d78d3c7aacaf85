// Command kube-apiserver is a thin wrapper that builds the Kubernetes API
// server from the Go module proxy for crowsnest's test environment. No
// kube-apiserver binary can be downloaded on the machines crowsnest is
// developed on, so we compile it; see ../build.sh.
package main

import (
	"os"

	"k8s.io/component-base/cli"
	"k8s.io/kubernetes/cmd/kube-apiserver/app"
)

func main() {
	os.Exit(cli.Run(app.NewAPIServerCommand()))
}
