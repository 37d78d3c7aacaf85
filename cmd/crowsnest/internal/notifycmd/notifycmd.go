package notifycmd

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/crowsnest-dev/crowsnest/config"
	"github.com/crowsnest-dev/crowsnest/internal/notifyctl"
)

// notifyOptions are the flags the notify dry runs share.
type notifyOptions struct {
	configPath string
	cmPath     string
	secretPath string
	appPath    string
	prevPath   string
	service    string
	recipient  string
	eventType  string
}

// NewCommand returns `crowsnest notify` and its subcommands.
func NewCommand() *cobra.Command {
	o := &notifyOptions{}
	cmd := &cobra.Command{
		Use:   "notify",
		Short: "Dry-run notification triggers and templates, send one test message; read the delivery log",
		Long: `The trigger and template commands evaluate triggers and render templates
offline, with the notifications of --config (the default catalog when no
config is given) and, with --notifications-cm, an argocd-notifications-cm read
from a file. Nothing is sent: for a configured service, template render shows
every request a send would make, answered locally, with credentials redacted
and the values of --notifications-secret shown as their $key. The send command
renders a template the same way and sends it, once, through a configured
service. The log command reads the daemon's delivery log from its ConfigMaps
in the cluster.`,
	}
	dryRunFlags := func(c *cobra.Command) {
		pf := c.PersistentFlags()
		pf.StringVar(&o.configPath, "config", "", "crowsnest config file whose notifications apply; the default catalog when empty")
		pf.StringVar(&o.cmPath, "notifications-cm", "", "an argocd-notifications-cm manifest (YAML) to merge under the config")
		pf.StringVar(&o.secretPath, "notifications-secret", "", "the argocd-notifications-secret manifest (YAML) whose keys the ConfigMap's $key references name")
		pf.StringVar(&o.appPath, "app", "", "the Application (YAML or JSON file)")
		pf.StringVar(&o.eventType, "event", "", "a crowsnest event type (image-updated, ...) for triggers that read event")
	}

	trigger := &cobra.Command{Use: "trigger", Short: "Dry-run triggers"}
	dryRunFlags(trigger)
	run := &cobra.Command{
		Use:   "run NAME",
		Short: "Evaluate a trigger: each condition's result, oncePer value and whether it would send",
		Long: `Run evaluates every condition of trigger NAME on --app (and --prev, the
previously observed Application) and prints its result, its oncePer value and
whether a message would be sent, assuming a fresh state with no baseline: the
daemon also skips conditions it already sent and, on first sight of an
Application, records instead of sending.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error { return o.runTrigger(cmd.OutOrStdout(), args[0]) },
	}
	run.Flags().StringVar(&o.prevPath, "prev", "", "the previously observed Application (YAML or JSON file)")
	trigger.AddCommand(run)

	template := &cobra.Command{Use: "template", Short: "Dry-run templates"}
	dryRunFlags(template)
	renderCmd := &cobra.Command{
		Use:   "render NAME",
		Short: "Render a template for one service: every request a send to a configured service makes, else the payload",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return o.renderTemplate(cmd.Context(), cmd.OutOrStdout(), args[0])
		},
	}
	renderCmd.Flags().StringVar(&o.service, "service", "", "slack, webhook or email, or the name of a configured service")
	renderCmd.Flags().StringVar(&o.recipient, "recipient", "", "the recipient, for services whose request depends on it (a Slack channel, email addresses, a Teams channel, an Opsgenie team, ...)")
	template.AddCommand(renderCmd)

	send := newNotifySendCommand(o)
	dryRunFlags(send)
	cmd.AddCommand(trigger, template, send, newNotifyLogCommand(), newNotifyRedeliverCommand())
	return cmd
}

// inputs are the files the flags name.
func (o *notifyOptions) inputs() *notifyctl.Inputs {
	return &notifyctl.Inputs{ConfigPath: o.configPath, ConfigMapPath: o.cmPath, SecretPath: o.secretPath,
		AppPath: o.appPath, EventType: o.eventType}
}

// ReadManifest reads a YAML or JSON file into out.
func ReadManifest(path string, out any) error { return notifyctl.ReadManifest(path, out) }

func (o *notifyOptions) runTrigger(w io.Writer, name string) error {
	if o.appPath == "" {
		return fmt.Errorf("--app is required")
	}
	conds, err := notifyctl.RunTrigger(o.inputs(), name, o.prevPath)
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "CONDITION\tRESULT\tONCEPER\tSEND\tTEMPLATES\tWHEN")
	for i := range conds {
		r := &conds[i]
		result := fmt.Sprint(r.Triggered)
		if r.Err != nil {
			result = "error: " + r.Err.Error()
		}
		send := "no"
		if r.Sends {
			send = "yes"
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\n", i, result, orDash(r.OncePer), send,
			strings.Join(r.Send, ","), r.When)
	}
	return tw.Flush()
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// renderTemplate prints what a send through a configured service does
// (printServiceRequests); for slack, webhook or email named by type with
// no such service configured, the payload: Slack's message fields as
// JSON, the webhook request, the email's subject and body.
func (o *notifyOptions) renderTemplate(ctx context.Context, w io.Writer, name string) error {
	if o.appPath == "" || o.service == "" {
		return fmt.Errorf("--app and --service are required")
	}
	r, err := notifyctl.Render(ctx, o.inputs(), name, o.service, o.recipient)
	if err != nil {
		return err
	}
	n := r.Notification
	if r.Recorded {
		return printServiceRequests(w, r)
	}
	switch r.Type {
	case config.ServiceSlack:
		var f slackFields
		if s := n.Slack; s != nil {
			f = slackFields{attachments: s.Attachments, blocks: s.Blocks, groupingKey: s.GroupingKey, deliveryPolicy: string(s.DeliveryPolicy)}
		}
		return printSlackMessage(w, name, n.Message, f)
	case config.ServiceWebhook:
		req, ok := n.Webhook[r.Service]
		if !ok {
			_, err := fmt.Fprintf(w, "template %s has no webhook request: nothing is sent\n", name)
			return err
		}
		method := req.Method
		if method == "" {
			method = config.DefaultWebhookMethod
		}
		_, err := fmt.Fprintf(w, "%s %s\n\n%s\n", strings.ToUpper(method), orSlash(req.Path), strings.TrimRight(req.Body, "\n"))
		return err
	default:
		subject := ""
		if n.Email != nil {
			subject = n.Email.Subject
		}
		_, err := fmt.Fprintf(w, "Subject: %s\n\n%s\n", subject, strings.TrimRight(n.Message, "\n"))
		return err
	}
}

// slackFields are a rendered Slack message's fields besides its text.
type slackFields struct{ attachments, blocks, groupingKey, deliveryPolicy string }

// printSlackMessage prints the Slack message's fields as JSON.
func printSlackMessage(w io.Writer, name, text string, s slackFields) error {
	msg := map[string]any{"text": text}
	for field, raw := range map[string]string{"attachments": s.attachments, "blocks": s.blocks} {
		if raw == "" {
			continue
		}
		var v any
		if err := json.Unmarshal([]byte(raw), &v); err != nil {
			return fmt.Errorf("template %s: slack.%s is not JSON: %w", name, field, err)
		}
		msg[field] = v
	}
	if s.groupingKey != "" {
		msg["groupingKey"] = s.groupingKey
	}
	if s.deliveryPolicy != "" {
		msg["deliveryPolicy"] = s.deliveryPolicy
	}
	b, err := json.MarshalIndent(msg, "", "  ")
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "%s\n", b)
	return err
}

func orSlash(p string) string {
	if p == "" {
		return "/"
	}
	return p
}
