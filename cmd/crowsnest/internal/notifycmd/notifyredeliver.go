package notifycmd

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/crowsnest-dev/crowsnest/internal/notifyctl"
	"github.com/crowsnest-dev/crowsnest/notify/outbox"
)

type notifyRedeliverOptions struct {
	kubeconfig string
	namespace  string
	output     string
}

func newNotifyRedeliverCommand() *cobra.Command {
	o := &notifyRedeliverOptions{}
	cmd := &cobra.Command{
		Use:   "redeliver ID",
		Short: "Send a delivered or dead-lettered notification again",
		Long: fmt.Sprintf(`Redeliver marks delivery ID pending again in the outbox ConfigMaps
(crowsnest-outbox-*), with a fresh attempt count, and counts the redelivery.
The running crowsnest (its leader) looks for such deliveries every %s and
sends it; if crowsnest is not running, it is sent at the next start. Follow
the result with "crowsnest notify log".

ID is the ID column of "crowsnest notify log", or a unique start of it of at
least %d characters. A delivery still pending cannot be redelivered:
crowsnest is still working on it.`, outbox.DefaultRescanInterval, outbox.MinIDPrefix),
		Example: `  crowsnest notify log --app argocd/guestbook
  crowsnest notify redeliver 3f9a0c1e -n crowsnest`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if o.output != "text" && o.output != "json" {
				return fmt.Errorf("--output %q: want text or json", o.output)
			}
			store, err := notifyctl.OutboxStore(o.kubeconfig, o.namespace)
			if err != nil {
				return err
			}
			before, after, err := notifyctl.Redeliver(cmd.Context(), store, args[0])
			if err != nil {
				return err
			}
			if o.output == "json" {
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				return enc.Encode(after)
			}
			return printRedelivery(cmd.OutOrStdout(), before, after)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.kubeconfig, "kubeconfig", "", "path to a kubeconfig; in-cluster config or $KUBECONFIG when empty")
	f.StringVarP(&o.namespace, "namespace", "n", "", "crowsnest's namespace, where the outbox ConfigMaps are; the kubeconfig's when empty")
	f.StringVarP(&o.output, "output", "o", "text", "text or json (the record as marked)")
	return cmd
}

func printRedelivery(w io.Writer, before, after outbox.Record) error {
	was := fmt.Sprintf("%s after %d attempt(s)", before.State, before.Attempts)
	if before.LastError != "" {
		was += ": " + before.LastError
	} else if before.Receipt.ID != "" {
		was += ": " + before.Receipt.ID
	}
	_, err := fmt.Fprintf(w, `delivery %s marked pending for redelivery
  app:           %s
  trigger:       %s
  destination:   %s
  was:           %s
  redeliveries:  %d
The running crowsnest leader sends it within about %s (at its next start if
none runs); see "crowsnest notify log --app %s".
`, after.ID, after.App, orDash(after.Trigger), after.Destination(), was, after.Redeliveries, outbox.DefaultRescanInterval, after.App)
	return err
}
