package notifycmd

import (
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/crowsnest-dev/crowsnest/internal/notifyctl"
	"github.com/crowsnest-dev/crowsnest/notify/outbox"
)

type notifyLogOptions struct {
	kubeconfig string
	namespace  string
	app        string
	output     string
}

func newNotifyLogCommand() *cobra.Command {
	o := &notifyLogOptions{}
	cmd := &cobra.Command{
		Use:   "log",
		Short: "Print the delivery log: what was sent where, when, and the result",
		Long: `Log reads the delivery log the daemon keeps in ConfigMaps (crowsnest-outbox-*)
in its namespace, oldest first: pending deliveries and the last records of
each Application. The ID column is what "crowsnest notify redeliver" takes.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			store, err := notifyctl.OutboxStore(o.kubeconfig, o.namespace)
			if err != nil {
				return err
			}
			out := &outbox.Outbox{Store: store}
			recs, err := out.Log(cmd.Context(), o.app)
			if err != nil {
				return err
			}
			return printDeliveryLog(cmd.OutOrStdout(), recs, o.output)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.kubeconfig, "kubeconfig", "", "path to a kubeconfig; in-cluster config or $KUBECONFIG when empty")
	f.StringVarP(&o.namespace, "namespace", "n", "", "crowsnest's namespace, where the outbox ConfigMaps are; the kubeconfig's when empty")
	f.StringVar(&o.app, "app", "", "only this Application (namespace/name)")
	f.StringVarP(&o.output, "output", "o", "text", "text or json")
	return cmd
}

func printDeliveryLog(w io.Writer, recs []outbox.Record, output string) error {
	switch output {
	case "json":
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(recs)
	case "text", "":
	default:
		return fmt.Errorf("--output %q: want text or json", output)
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "CREATED\tAPP\tTRIGGER\tDESTINATION\tSTATE\tATTEMPTS\tID\tDETAIL")
	for i := range recs {
		r := &recs[i]
		detail := r.LastError
		if detail == "" {
			detail = r.Receipt.ID
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%s\t%s\n", r.CreatedAt.UTC().Format(time.RFC3339), r.App,
			orDash(r.Trigger), r.Destination(), r.State, r.Attempts, r.ID, orDash(detail))
	}
	return tw.Flush()
}
