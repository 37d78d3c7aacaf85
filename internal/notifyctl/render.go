package notifyctl

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/crowsnest-dev/crowsnest/config"
	"github.com/crowsnest-dev/crowsnest/notify"
	"github.com/crowsnest-dev/crowsnest/notify/pipeline"
	"github.com/crowsnest-dev/crowsnest/notify/render"
	"github.com/crowsnest-dev/crowsnest/notify/services/svc"
)

// Rendered is a template rendered for one service.
type Rendered struct {
	// Service is the service's name (or the built-in type it names), and
	// Type its type.
	Service, Type string
	// Notification is the rendered template.
	Notification notify.Notification
	// Recorded is set for a configured service: its sender made the send
	// with recorders (an HTTP transport, an SMTP mailer) that answer as
	// the service would, so that every step succeeds, and nothing left the
	// process. Send is what it did. Later, for a Slack message with a
	// grouping key, is what a later message of the group does once its
	// thread exists (a reply in it, or an update of its first message).
	Recorded bool
	Send     Recording
	Later    *Recording
	// StandIns are the service's credentials that cannot be read here,
	// as "field (reference)": an env: variable not set, a file: not
	// here, a $key without --notifications-secret. The send used a
	// stand-in, which the requests show redacted as any credential.
	StandIns []string
	// secret is the notifications Secret, whose values HideSecrets hides.
	secret map[string][]byte
}

// Recording is what one send of a dry run did.
type Recording struct {
	// Note says what the send assumes, when the sender's state decides
	// what it sends (a Slack group's thread).
	Note string
	// Requests are its HTTP requests in order, Mails the messages it
	// handed to the SMTP server.
	Requests []Request
	Mails    []svc.Mail
	// Skipped says why the sender sent nothing, when it did not.
	Skipped string
	// Failed is the sender's error after its requests, when the dry run's
	// answers did not satisfy it.
	Failed string
}

// Render renders template name for the Application of in.AppPath and for
// service (slack, webhook, email, or a configured service's name). For a
// configured service it also makes the send, with recorders that answer
// as the service would (Rendered.Recorded); nothing leaves the process.
func Render(ctx context.Context, in *Inputs, name, service, recipient string) (*Rendered, error) {
	set, secret, t, err := in.compiled(name)
	if err != nil {
		return nil, err
	}
	typ, err := serviceType(service, set.Config.Services)
	if err != nil {
		return nil, err
	}
	app, err := readApp(in.AppPath)
	if err != nil {
		return nil, err
	}
	n, err := render.Once(pipeline.ServiceTemplate(name, t, service, typ),
		pipeline.TemplateVars(app, in.event(), set.Config.Context, typ))
	if err != nil {
		return nil, err
	}
	out := &Rendered{Service: service, Type: typ, Notification: n, secret: secret}
	svcConf, configured := set.Config.Services[service]
	switch {
	case svcConf.Unsupported != "":
		return nil, fmt.Errorf("service %s: type %q is not supported by crowsnest: its notifications would fail", service, svcConf.Unsupported)
	case configured:
		if err := out.record(ctx, svcConf, recipient); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// HideSecrets replaces each value of the notifications Secret in text by
// its `$key` reference, also in the forms URLs and JSON encode it in.
func (r *Rendered) HideSecrets(text string) string {
	return secretReplacer(r.secret).Replace(text)
}

// serviceType checks service and returns its type: a configured
// service's, or the built-in type it names.
func serviceType(service string, services map[string]config.Service) (string, error) {
	if s, ok := services[service]; ok {
		return s.Type(), nil
	}
	if !slices.Contains([]string{config.ServiceSlack, config.ServiceWebhook, config.ServiceEmail}, service) {
		return "", fmt.Errorf("--service %q: want slack, webhook, email or a configured service (%s)", service, strings.Join(sortedNames(services), ", "))
	}
	return service, nil
}
