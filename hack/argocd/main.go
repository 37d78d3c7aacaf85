// Command argocd is a thin wrapper that builds the two Argo CD components
// crowsnest's end-to-end tests run against (the application controller
// and the repo server) from the Go module proxy into one binary; no Argo
// CD binary can be downloaded on the machines crowsnest is developed on.
// The first argument picks the component:
//
//	argocd application-controller [flags]
//	argocd repo-server [flags]
//
// The repo server runs git with GIT_ASKPASS pointing at its own
// executable and ARGOCD_BINARY_NAME=argocd-git-ask-pass, so that name
// selects the ask-pass helper. See ../argocd.sh.
package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	appcontroller "github.com/argoproj/argo-cd/v3/cmd/argocd-application-controller/commands"
	gitaskpass "github.com/argoproj/argo-cd/v3/cmd/argocd-git-ask-pass/commands"
	reposerver "github.com/argoproj/argo-cd/v3/cmd/argocd-repo-server/commands"
)

func main() {
	var cmd *cobra.Command
	args := os.Args[1:]
	if os.Getenv("ARGOCD_BINARY_NAME") == "argocd-git-ask-pass" {
		cmd = gitaskpass.NewCommand()
	} else {
		if len(args) == 0 {
			fmt.Fprintln(os.Stderr, "usage: argocd application-controller|repo-server [flags]")
			os.Exit(2)
		}
		switch args[0] {
		case "application-controller":
			cmd = appcontroller.NewCommand()
		case "repo-server":
			cmd = reposerver.NewCommand()
		default:
			fmt.Fprintf(os.Stderr, "argocd: unknown component %q (want application-controller or repo-server)\n", args[0])
			os.Exit(2)
		}
		args = args[1:]
	}
	cmd.SetArgs(args)
	if err := cmd.Execute(); err != nil {
		os.Exit(1)
	}
}
