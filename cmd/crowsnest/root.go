package main

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"

	"github.com/crowsnest-dev/crowsnest/cmd/crowsnest/internal/configcmd"
	"github.com/crowsnest-dev/crowsnest/cmd/crowsnest/internal/notifycmd"
	"github.com/crowsnest-dev/crowsnest/cmd/crowsnest/internal/testcmd"
	"github.com/crowsnest-dev/crowsnest/cmd/crowsnest/internal/windowscmd"
)

// version is set at build time with -ldflags "-X main.version=v1.2.3".
var version = "dev"

// userAgent is what crowsnest's kube clients call themselves.
func userAgent() string { return "crowsnest/" + version }

func newRootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:   "crowsnest",
		Short: "Image updates, notifications and sync windows for Argo CD, in one engine",
		Long: `crowsnest watches Argo CD Applications, finds newer container images in
registries, writes the change back to Git or to the Application, announces what
happened (Slack, webhooks, email) and keeps deployments inside sync windows.`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(newRunCommand(), newDemoCommand(), testcmd.NewCommand(userAgent()), windowscmd.NewCommand(userAgent()), newVersionCommand(), configcmd.NewCommand(), notifycmd.NewCommand(), newMigrateCommand())
	return root
}

func newVersionCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the crowsnest version",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			commit, modified := "unknown", false
			if info, ok := debug.ReadBuildInfo(); ok {
				for _, s := range info.Settings {
					switch s.Key {
					case "vcs.revision":
						commit = s.Value
					case "vcs.modified":
						modified = s.Value == "true"
					}
				}
			}
			if modified {
				commit += "-dirty"
			}
			_, err := fmt.Fprintf(cmd.OutOrStdout(), "crowsnest %s (commit %s, %s, %s/%s)\n",
				version, commit, runtime.Version(), runtime.GOOS, runtime.GOARCH)
			return err
		},
	}
}
