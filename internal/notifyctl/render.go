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
)

// Rendered is a template rendered for one service.
type Rendered struct {
	// Service is the service's name (or the built-in type it names), and
	// Type its type.
	Service, Type string
	// Notification is the rendered template.
	Notification notify.Notification
	// Ext is set for a service of a type from package services; Requests
	// are then every request a send would make (none when it sends
	// nothing for this template and recipient).
	Ext      bool
	Requests []Request
	// secret is the notifications Secret, whose values HideSecrets hides.
	secret map[string][]byte
}

// Render renders template name for the Application of in.AppPath and for
// service (slack, webhook, email, or a configured service's name). For a
// service of a type from package services, it also makes the send with a
// transport that records each request and answers as the service would,
// so that every step of it succeeds; nothing leaves the process.
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
	if svc := set.Config.Services[service]; svc.Ext != nil {
		out.Ext = true
		if out.Requests, err = requests(ctx, service, svc, n, recipient); err != nil {
			return nil, err
		}
	} else if svc.Unsupported != "" {
		return nil, fmt.Errorf("service %s: type %q is not supported by crowsnest: its notifications would fail", service, svc.Unsupported)
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
