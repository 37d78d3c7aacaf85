package configcmd

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/crowsnest-dev/crowsnest/config"
	"github.com/crowsnest-dev/crowsnest/internal/configcheck"
	"github.com/crowsnest-dev/crowsnest/internal/redact"
)

// NewCommand is `crowsnest config` and its subcommand validate.
func NewCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "config",
		Short: "Work with crowsnest config files",
	}
	cmd.AddCommand(&cobra.Command{
		Use:   "validate FILE...",
		Short: "Check config files (and argocd-notifications-cm manifests); print every problem with its file:line and field path",
		Long: `Check config files as run checks them at startup and on reload: the schema
(unknown keys, types, values, sync windows), trigger expressions, templates,
image policies, Git and registry settings. Every problem is printed in one
run, as FILE:LINE: FIELD: MESSAGE (no line when the field is not in the file,
e.g. a catalog trigger). A FILE that is a ConfigMap manifest is checked as an
argocd-notifications-cm: what the daemon rejects, its triggers and templates,
and every service type or template block crowsnest cannot send to (the daemon
warns about those and dead-letters their deliveries; here they fail).`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			bad := 0
			for _, path := range args {
				problems, err := configcheck.File(path)
				if err != nil {
					bad++
					fmt.Fprintf(cmd.ErrOrStderr(), "%s: invalid\n  %s\n", path, redact.String(err.Error()))
					continue
				}
				if len(problems) > 0 {
					bad++
					fmt.Fprintf(cmd.ErrOrStderr(), "%s: invalid (%d problems)\n", path, len(problems))
					for _, p := range problems {
						fmt.Fprintf(cmd.ErrOrStderr(), "  %s\n", redact.String(problemString(path, p)))
					}
					continue
				}
				fmt.Fprintf(cmd.OutOrStdout(), "%s: valid\n", path)
			}
			if bad > 0 {
				return fmt.Errorf("%d of %d config files invalid", bad, len(args))
			}
			return nil
		},
	})
	return cmd
}

// problemString spells one problem as FILE:LINE: FIELD: MESSAGE, the form
// editors and CI annotate.
func problemString(file string, p config.FieldError) string {
	loc := file
	if p.Line > 0 {
		loc += ":" + strconv.Itoa(p.Line)
	}
	// An expression's snippet spans lines: keep them under the problem.
	msg := strings.ReplaceAll(p.Msg, "\n", "\n    ")
	if p.Path != "" {
		return loc + ": " + p.Path + ": " + msg
	}
	return loc + ": " + msg
}
