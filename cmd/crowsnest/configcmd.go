package main

import (
	"errors"
	"fmt"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/crowsnest-dev/crowsnest/config"
	"github.com/crowsnest-dev/crowsnest/internal/redact"
)

func newConfigCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "config",
		Short: "Work with crowsnest config files",
	}
	cmd.AddCommand(&cobra.Command{
		Use:   "validate FILE...",
		Short: "Check config files; print every problem with its field path",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			bad := 0
			for _, path := range args {
				c, err := config.Load(path)
				if err == nil {
					err = checkConfig(c, filepath.Dir(path)) // what run checks
				}
				if err != nil {
					bad++
					fmt.Fprintf(cmd.ErrOrStderr(), "%s: invalid\n", path)
					var verr *config.ValidationError
					if errors.As(err, &verr) {
						for _, fe := range verr.Errors {
							fmt.Fprintf(cmd.ErrOrStderr(), "  %s\n", redact.String(fe.Error()))
						}
					} else {
						fmt.Fprintf(cmd.ErrOrStderr(), "  %s\n", redact.String(err.Error()))
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
