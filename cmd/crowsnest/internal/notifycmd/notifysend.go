package notifycmd

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/crowsnest-dev/crowsnest/config"
	"github.com/crowsnest-dev/crowsnest/internal/redact"
	"github.com/crowsnest-dev/crowsnest/internal/setup"
	"github.com/crowsnest-dev/crowsnest/notify"
	"github.com/crowsnest-dev/crowsnest/notify/pipeline"
	"github.com/crowsnest-dev/crowsnest/notify/render"
	"github.com/crowsnest-dev/crowsnest/triggers"
)

// defaultSendTimeout bounds `notify send`'s one delivery: long enough for
// a slow SMTP server's STARTTLS and AUTH, short enough for a person
// waiting at a terminal.
const defaultSendTimeout = 30 * time.Second

// SendReport is what `notify send -o json` prints.
type SendReport struct {
	Template    string `json:"template"`
	Service     string `json:"service"`
	ServiceType string `json:"serviceType"`
	Recipient   string `json:"recipient,omitempty"`
	// Endpoint is where the message went (the webhook URL, Slack's API
	// URL, the SMTP server), with secrets masked.
	Endpoint string         `json:"endpoint"`
	Receipt  notify.Receipt `json:"receipt"`
}

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
			rep, err := o.send(ctx, args[0], recipient)
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

// send renders template name and sends it through o.service to recipient.
func (o *notifyOptions) send(ctx context.Context, name, recipient string) (*SendReport, error) {
	if o.appPath == "" || o.service == "" {
		return nil, errors.New("--app and --service are required")
	}
	n, secret, err := o.mergedNotifications()
	if err != nil {
		return nil, err
	}
	set, err := triggers.Compile(n)
	if err != nil {
		return nil, err
	}
	t, ok := set.Config.Templates[name]
	if !ok {
		return nil, fmt.Errorf("no template %q (known: %s)", name, strings.Join(sortedNames(set.Config.Templates), ", "))
	}
	if _, ok := set.Config.Services[o.service]; !ok {
		known := sortedNames(set.Config.Services)
		if len(known) == 0 {
			return nil, fmt.Errorf("--service %q: no services are configured (--config's notifications.services or --notifications-cm's service.* keys)", o.service)
		}
		return nil, fmt.Errorf("--service %q: not a configured service (configured: %s)", o.service, strings.Join(known, ", "))
	}
	// Resolve the services' secrets as run does, on a copy.
	resolved, err := prepareServices(&set.Config, secret)
	if err != nil {
		return nil, err
	}
	svcConf := resolved.Services[o.service]
	typ := svcConf.Type()
	app, err := readApp(o.appPath)
	if err != nil {
		return nil, err
	}
	msg, err := render.Once(pipeline.ServiceTemplate(name, t, o.service, typ),
		pipeline.TemplateVars(app, o.event(), set.Config.Context, typ))
	if err != nil {
		return nil, err
	}
	svc, err := setup.BuildService(o.service, svcConf, nil)
	if err != nil {
		return nil, fmt.Errorf("service %s: %w", o.service, err)
	}
	rep := &SendReport{Template: name, Service: o.service, ServiceType: typ, Recipient: recipient, Endpoint: serviceEndpoint(svcConf)}
	dest := notify.Destination{Service: o.service, Recipient: recipient}
	rep.Receipt, err = svc.Send(ctx, msg, dest)
	if err != nil {
		return nil, fmt.Errorf("sending template %s to %s (%s, %s): %w", name, rep.to(), typ, rep.Endpoint, redact.Error(err))
	}
	if rep.Receipt.Skipped {
		return nil, fmt.Errorf("template %s has nothing for %s service %s, nothing was sent: %s", name, typ, o.service, cmpOr(rep.Receipt.Detail, "no message"))
	}
	return rep, nil
}

// prepareServices resolves the services' secrets (env:, file:, $key from
// secret) on a copy of n, as run's prepareNotifications does.
func prepareServices(in *config.Notifications, secret map[string][]byte) (*config.Notifications, error) {
	n := *in
	n.Services = make(map[string]config.Service, len(in.Services))
	for name, s := range in.Services {
		n.Services[name] = setup.CloneService(s)
	}
	if err := n.ResolveSecrets(secret); err != nil {
		return nil, err
	}
	return &n, nil
}

func cmpOr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// serviceEndpoint is where a service sends, with secrets masked.
func serviceEndpoint(s config.Service) string {
	switch {
	case s.Slack != nil:
		return redact.URL(cmpOr(s.Slack.APIURL, "https://slack.com/api/"))
	case s.Webhook != nil:
		return redact.URL(s.Webhook.URL)
	case s.Email != nil:
		port := s.Email.Port
		if port == 0 {
			port = config.DefaultSMTPPort
		}
		return "smtp://" + net.JoinHostPort(s.Email.Host, strconv.Itoa(port))
	case s.Ext != nil:
		return s.Ext.Type + " API"
	}
	return ""
}

// to is the destination as people write it: service, or service:recipient.
func (rep *SendReport) to() string {
	if rep.Recipient == "" {
		return rep.Service
	}
	return rep.Service + ":" + rep.Recipient
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
	fmt.Fprintf(w, "sent template %s to %s (%s, %s)\n", rep.Template, rep.to(), rep.ServiceType, rep.Endpoint)
	fmt.Fprintf(w, "receipt: %s\n", cmpOr(rep.Receipt.ID, "-"))
	if rep.Receipt.Detail != "" {
		fmt.Fprintf(w, "detail: %s\n", rep.Receipt.Detail)
	}
	return nil
}
