package notifycmd

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/crowsnest-dev/crowsnest/internal/notifyctl"
)

// defaultSendTimeout bounds `notify send`'s one delivery: long enough for
// a slow SMTP server's STARTTLS and AUTH, short enough for a person
// waiting at a terminal.
const defaultSendTimeout = 30 * time.Second

// SendReport is what `notify send -o json` prints (notifyctl's).
type SendReport = notifyctl.SendReport

func newNotifySendCommand(o *notifyOptions) *cobra.Command {
	var (
		recipient string
		output    string
		timeout   time.Duration
	)
	cmd := &cobra.Command{
		Use:   "send TEMPLATE",
		Short: "Render a template for an Application and send one real message through a configured service",
		Long: `Send renders TEMPLATE for the Application in --app and sends it, once, through
the configured service --service to --recipient (a Slack channel, an email
address, nothing for a webhook), as the daemon would: the service's secrets are
resolved (env:, file:, and with --notifications-cm the $key references the
--notifications-secret manifest answers). It prints where the message went
(secrets masked) and the service's receipt, and exits 1 if the message was not
sent. This is Argo CD's "argocd admin notifications template notify".`,
		Example: `  crowsnest notify send app-deployed --config crowsnest.yaml --app app.yaml --service slack --recipient my-channel
  crowsnest notify send app-sync-failed --notifications-cm argocd-notifications-cm.yaml \
    --notifications-secret argocd-notifications-secret.yaml --app app.yaml --service webhook`,
		Args:         cobra.ExactArgs(1),
		SilenceUsage: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, cancel := context.WithTimeout(cmd.Context(), timeout)
			defer cancel()
			if o.appPath == "" || o.service == "" {
				return errors.New("--app and --service are required")
			}
			rep, err := notifyctl.Send(ctx, o.inputs(), args[0], o.service, recipient)
			if err != nil {
				return err
			}
			return printSendReport(cmd.OutOrStdout(), rep, output)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.service, "service", "", "the name of a configured service (required)")
	f.StringVar(&recipient, "recipient", "", "the destination: a Slack channel, comma-separated email addresses; empty for a webhook")
	f.StringVarP(&output, "output", "o", "text", "text or json")
	f.DurationVar(&timeout, "timeout", defaultSendTimeout, "how long the one delivery may take")
	return cmd
}

func printSendReport(w io.Writer, rep *SendReport, output string) error {
	switch output {
	case "json":
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	case "text", "":
	default:
		return fmt.Errorf("--output %q: want text or json", output)
	}
	fmt.Fprintf(w, "sent template %s to %s (%s, %s)\n", rep.Template, rep.To(), rep.ServiceType, rep.Endpoint)
	fmt.Fprintf(w, "receipt: %s\n", orDash(rep.Receipt.ID))
	if rep.Receipt.Detail != "" {
		fmt.Fprintf(w, "detail: %s\n", rep.Receipt.Detail)
	}
	return nil
}
