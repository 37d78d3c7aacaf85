package pipeline

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/crowsnest-dev/crowsnest/config"
	"github.com/crowsnest-dev/crowsnest/notify"
	"github.com/crowsnest-dev/crowsnest/notify/render"
	"github.com/crowsnest-dev/crowsnest/notify/services"
	"github.com/crowsnest-dev/crowsnest/triggers"
)

// compiled is one notifications config, compiled: triggers, the
// subscription resolver and every template compiled for every service
// (a template's blocks depend on the service's type and name).
type compiled struct {
	set      *triggers.Set
	resolver *triggers.Resolver
	// templates[template][service]
	templates map[string]map[string]*render.Compiled
	baseline  bool
	// appTriggers and eventTriggers are sorted names, so evaluation order
	// (and so the order of sends) is stable.
	appTriggers, eventTriggers []string
}

// Check compiles n as Notifier.Apply does (conditions,
// resolver, every template for every service) and keeps nothing, for
// `config validate`.
func Check(n *config.Notifications) error {
	_, err := compile(n)
	return err
}

// compile compiles n (catalog merged when on) into what the
// Notifier evaluates and renders; a broken trigger or template fails with
// its name.
func compile(n *config.Notifications, opts ...render.CompileOption) (*compiled, error) {
	set, err := triggers.Compile(n)
	if err != nil {
		return nil, err
	}
	res, err := triggers.NewResolver(&set.Config)
	if err != nil {
		return nil, err
	}
	c := &compiled{set: set, resolver: res, templates: map[string]map[string]*render.Compiled{}, baseline: n.BaselineEnabled()}
	var errs []error
	for name, t := range set.Config.Templates {
		per := map[string]*render.Compiled{}
		for svcName, svc := range set.Config.Services {
			ct, err := render.Compile(ServiceTemplate(name, t, svcName, svc.Type()), opts...)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			per[svcName] = ct
		}
		c.templates[name] = per
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	for name, t := range set.Triggers {
		if t.OnEvent {
			c.eventTriggers = append(c.eventTriggers, name)
		} else {
			c.appTriggers = append(c.appTriggers, name)
		}
	}
	sort.Strings(c.appTriggers)
	sort.Strings(c.eventTriggers)
	return c, nil
}

// ServiceTemplate is the part of a configured template that the service
// svcName of type typ sends: the message (email's body when set), and
// only that service's block. A webhook takes its own entry, else the
// catalog's "*" entry; email's subject falls back to the title.
func ServiceTemplate(name string, t config.Template, svcName, typ string) notify.Template {
	out := notify.Template{Name: name, Message: t.Message}
	switch typ {
	case config.ServiceSlack:
		if s := t.Slack; s != nil {
			out.Slack = &notify.SlackTemplate{
				Attachments: s.Attachments, Blocks: s.Blocks, GroupingKey: s.GroupingKey,
				NotifyBroadcast: s.NotifyBroadcast, DeliveryPolicy: notify.DeliveryPolicy(s.DeliveryPolicy),
			}
		}
	case config.ServiceWebhook:
		w, ok := t.Webhook[svcName]
		if !ok {
			w, ok = t.Webhook[config.AnyWebhook]
		}
		if ok {
			out.Webhook = map[string]notify.WebhookTemplate{svcName: {Method: w.Method, Path: w.Path, Body: w.Body}}
		}
	case config.ServiceEmail:
		subject := t.Title
		if t.Email != nil {
			if t.Email.Subject != "" {
				subject = t.Email.Subject
			}
			if t.Email.Body != "" {
				out.Message = t.Email.Body
			}
		}
		if subject != "" {
			out.Email = &notify.EmailTemplate{Subject: subject}
		}
	default:
		out.Blocks = services.TemplateBlocks(name, t.Blocks, typ)
	}
	return out
}

// TemplateVars are the variables templates read: the Application, the
// configured context, the crowsnest event (nil for Application
// transitions), the service type and Argo CD's repo helpers.
func TemplateVars(app, event map[string]any, vars map[string]string, serviceType string) map[string]any {
	return map[string]any{
		"app": app, "context": vars, "event": event,
		"serviceType": serviceType, "repo": render.RepoHelpers(),
	}
}

// TemplateVarsRepo is TemplateVars whose repo.GetCommitMetadata and
// repo.GetAppDetails are answered by repo about app (nil repo: they fail
// the render).
func TemplateVarsRepo(ctx context.Context, repo render.RepoLookup, app, event map[string]any, vars map[string]string, serviceType string) map[string]any {
	out := TemplateVars(app, event, vars, serviceType)
	out["repo"] = render.RepoHelpersFor(ctx, repo, app)
	return out
}

// TriggerRepo is `repo` in trigger conditions about app: its
// GetCommitMetadata and GetAppDetails are answered by repo as in
// templates (nil repo: they fail the condition).
func TriggerRepo(ctx context.Context, repo render.RepoLookup, app map[string]any) triggers.RepoFuncs {
	h := render.RepoHelpersFor(ctx, repo, app)
	commit, _ := h["GetCommitMetadata"].(func(any) (render.CommitMetadata, error))
	details, _ := h["GetAppDetails"].(func() (render.AppDetail, error))
	return triggers.NewRepoFuncs(
		func(sha any) (any, error) { return commit(sha) },
		func() (any, error) { return details() },
	)
}

// render renders the templates of one send for one service and merges
// them as argocd-notifications does: a later template's non-empty parts
// win.
func (c *compiled) render(templates []string, service string, vars map[string]any) (notify.Notification, error) {
	var out notify.Notification
	for _, name := range templates {
		ct := c.templates[name][service]
		if ct == nil {
			return out, fmt.Errorf("template %q for service %q not compiled", name, service)
		}
		n, err := ct.Render(vars)
		if err != nil {
			return out, err
		}
		mergeNotification(&out, n)
	}
	return out, nil
}

func mergeNotification(dst *notify.Notification, n notify.Notification) {
	if n.Message != "" {
		dst.Message = n.Message
	}
	if n.Slack != nil {
		dst.Slack = n.Slack
	}
	if n.Email != nil {
		dst.Email = n.Email
	}
	for k, w := range n.Webhook {
		if dst.Webhook == nil {
			dst.Webhook = map[string]notify.WebhookTemplate{}
		}
		dst.Webhook[k] = w
	}
	// The blocks of the other service types (github:, teams:, ...): a
	// later template's block replaces an earlier one's whole, as Argo
	// CD's templater sets the service's part of the notification.
	for k, b := range n.Blocks {
		if dst.Blocks == nil {
			dst.Blocks = map[string]json.RawMessage{}
		}
		dst.Blocks[k] = b
	}
}

// recipients expands a destination: a Slack subscription that names no
// channel goes to the service's default channels.
func (c *compiled) recipients(d triggers.Destination) []string {
	if d.Recipient != "" {
		return []string{d.Recipient}
	}
	svc, ok := c.set.Config.Services[d.Service]
	if ok && svc.Slack != nil && len(svc.Slack.Channels) > 0 {
		return svc.Slack.Channels
	}
	return []string{""}
}

// serviceType returns the type of a configured service, "" when unknown.
func (c *compiled) serviceType(name string) string {
	svc, ok := c.set.Config.Services[name]
	if !ok {
		return ""
	}
	return svc.Type()
}

// deliveryKey is a delivery's idempotency key: the firing's dedupe key,
// the level-firing counter when the condition has no oncePer value, and
// the destination.
func deliveryKey(s triggers.Send, seq uint64, service, recipient string) string {
	var b strings.Builder
	b.WriteString(s.Key)
	if s.OncePer == "" {
		fmt.Fprintf(&b, "#%d", seq)
	}
	b.WriteString("|" + service + "|" + recipient)
	return b.String()
}
