package notifycmd

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"

	"github.com/crowsnest-dev/crowsnest/config"
	"github.com/crowsnest-dev/crowsnest/notify/pipeline"
	"github.com/crowsnest-dev/crowsnest/notify/render"
	"github.com/crowsnest-dev/crowsnest/triggers"
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
from a file. Secrets are not resolved: nothing is sent. The send command
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
		Short: "Render a template for one service and print the payload",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return o.renderTemplate(cmd.OutOrStdout(), args[0])
		},
	}
	renderCmd.Flags().StringVar(&o.service, "service", "", "slack, webhook or email, or the name of a configured service")
	renderCmd.Flags().StringVar(&o.recipient, "recipient", "", "the recipient, for services whose request depends on it (a Teams channel, an Opsgenie team, ...)")
	template.AddCommand(renderCmd)

	send := newNotifySendCommand(o)
	dryRunFlags(send)
	cmd.AddCommand(trigger, template, send, newNotifyLogCommand(), newNotifyRedeliverCommand())
	return cmd
}

// notifications returns the configured notifications, compiled.
func (o *notifyOptions) notifications() (*triggers.Set, error) {
	n, _, err := o.mergedNotifications()
	if err != nil {
		return nil, err
	}
	return triggers.Compile(n)
}

// mergedNotifications returns the notifications of --config (the default
// catalog without one) with --notifications-cm merged under them, and the
// --notifications-secret data that answers the ConfigMap's $key
// references.
func (o *notifyOptions) mergedNotifications() (*config.Notifications, map[string][]byte, error) {
	n := &config.Notifications{Catalog: true}
	if o.configPath != "" {
		c, err := config.Load(o.configPath)
		if err != nil {
			return nil, nil, err
		}
		n = &c.Notifications
	}
	secret, err := o.secret()
	if err != nil {
		return nil, nil, err
	}
	if o.cmPath != "" {
		var cm struct {
			Data map[string]string `json:"data"`
		}
		if err := ReadManifest(o.cmPath, &cm); err != nil {
			return nil, nil, err
		}
		parsed, err := config.ParseArgoCDConfigMap(cm.Data, secret)
		if err != nil {
			return nil, nil, err
		}
		n.Merge(parsed)
	}
	return n, secret, nil
}

// secret reads --notifications-secret: a Secret manifest's data
// (base64, as kubectl get -o yaml prints it) and stringData.
func (o *notifyOptions) secret() (map[string][]byte, error) {
	if o.secretPath == "" {
		if o.cmPath != "" {
			return map[string][]byte{}, nil
		}
		return nil, nil
	}
	if o.cmPath == "" {
		return nil, errors.New("--notifications-secret needs --notifications-cm, whose $key references it answers")
	}
	var sec struct {
		Kind       string            `json:"kind"`
		Data       map[string][]byte `json:"data"`
		StringData map[string]string `json:"stringData"`
	}
	if err := ReadManifest(o.secretPath, &sec); err != nil {
		// The decoder's message may quote a value: name the file only.
		return nil, fmt.Errorf("%s: not a Secret manifest with base64 data or stringData", o.secretPath)
	}
	if sec.Kind != "Secret" {
		return nil, fmt.Errorf("%s: kind %q, want Secret", o.secretPath, sec.Kind)
	}
	out := make(map[string][]byte, len(sec.Data)+len(sec.StringData))
	maps.Copy(out, sec.Data)
	for k, v := range sec.StringData {
		out[k] = []byte(v)
	}
	return out, nil
}

// ReadManifest reads a YAML or JSON file into out.
func ReadManifest(path string, out any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := yaml.Unmarshal(b, out); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

func readApp(path string) (map[string]any, error) {
	var app map[string]any
	if err := ReadManifest(path, &app); err != nil {
		return nil, err
	}
	if md, _ := app["metadata"].(map[string]any); md == nil || md["name"] == nil {
		return nil, fmt.Errorf("%s: not an Application (no metadata.name)", path)
	}
	return app, nil
}

func (o *notifyOptions) event() map[string]any {
	if o.eventType == "" {
		return nil
	}
	return (&triggers.Event{Type: o.eventType, ID: "dry-run", Time: time.Now()}).Map()
}

func (o *notifyOptions) runTrigger(w io.Writer, name string) error {
	if o.appPath == "" {
		return fmt.Errorf("--app is required")
	}
	set, err := o.notifications()
	if err != nil {
		return err
	}
	tr := set.Triggers[name]
	if tr == nil {
		return fmt.Errorf("no trigger %q (known: %s)", name, strings.Join(sortedNames(set.Triggers), ", "))
	}
	app, err := readApp(o.appPath)
	if err != nil {
		return err
	}
	var prev map[string]any
	if o.prevPath != "" {
		if prev, err = readApp(o.prevPath); err != nil {
			return err
		}
	}
	now := time.Now()
	results := triggers.Evaluate(tr, triggers.NewEnv(app, prev, o.event(), set.Config.Context, now))
	// The daemon sends what fired since its last observation: with
	// --prev, that observation's results are the state the decision
	// starts from (a condition already true then, or a oncePer value
	// already sent, is not sent again).
	st := triggers.State{Seen: true}
	opts := triggers.StepOptions{App: "dry-run", Event: tr.OnEvent}
	if prev != nil && !tr.OnEvent {
		st, _ = triggers.Step(st, triggers.Evaluate(tr, triggers.NewEnv(prev, nil, nil, set.Config.Context, now)), opts)
	}
	_, sends := triggers.Step(st, results, opts)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "CONDITION\tRESULT\tONCEPER\tSEND\tTEMPLATES\tWHEN")
	for i, r := range results {
		result := fmt.Sprint(r.Triggered)
		if r.Err != nil {
			result = "error: " + r.Err.Error()
		}
		send := "no"
		if slices.ContainsFunc(sends, func(s triggers.Send) bool { return s.Condition == r.Condition }) {
			send = "yes"
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\n", i, result, orDash(r.OncePer), send,
			strings.Join(r.Send, ","), tr.Conditions[i].When)
	}
	return tw.Flush()
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func sortedNames[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// renderTemplate prints what the service would send: Slack's message
// fields as JSON, the webhook request, the email's subject and body.
func (o *notifyOptions) renderTemplate(w io.Writer, name string) error {
	if o.appPath == "" || o.service == "" {
		return fmt.Errorf("--app and --service are required")
	}
	merged, secret, err := o.mergedNotifications()
	if err != nil {
		return err
	}
	set, err := triggers.Compile(merged)
	if err != nil {
		return err
	}
	t, ok := set.Config.Templates[name]
	if !ok {
		return fmt.Errorf("no template %q (known: %s)", name, strings.Join(sortedNames(set.Config.Templates), ", "))
	}
	svcName := o.service
	typ, err := o.serviceType(set.Config.Services)
	if err != nil {
		return err
	}
	app, err := readApp(o.appPath)
	if err != nil {
		return err
	}
	n, err := render.Once(pipeline.ServiceTemplate(name, t, svcName, typ),
		pipeline.TemplateVars(app, o.event(), set.Config.Context, typ))
	if err != nil {
		return err
	}
	if svc := set.Config.Services[svcName]; svc.Ext != nil {
		return printServiceRequests(w, svcName, svc, n, o.recipient, secret)
	} else if svc.Unsupported != "" {
		return fmt.Errorf("service %s: type %q is not supported by crowsnest: its notifications would fail", svcName, svc.Unsupported)
	}
	switch typ {
	case config.ServiceSlack:
		var f slackFields
		if s := n.Slack; s != nil {
			f = slackFields{attachments: s.Attachments, blocks: s.Blocks, groupingKey: s.GroupingKey, deliveryPolicy: string(s.DeliveryPolicy)}
		}
		return printSlackMessage(w, name, n.Message, f)
	case config.ServiceWebhook:
		req, ok := n.Webhook[svcName]
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

// serviceType checks --service and returns its type: a configured
// service's, or the built-in type it names.
func (o *notifyOptions) serviceType(services map[string]config.Service) (string, error) {
	if s, ok := services[o.service]; ok {
		return s.Type(), nil
	}
	if !slices.Contains([]string{config.ServiceSlack, config.ServiceWebhook, config.ServiceEmail}, o.service) {
		return "", fmt.Errorf("--service %q: want slack, webhook, email or a configured service (%s)", o.service, strings.Join(sortedNames(services), ", "))
	}
	return o.service, nil
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
