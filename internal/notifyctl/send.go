package notifyctl

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"

	"github.com/crowsnest-dev/crowsnest/config"
	"github.com/crowsnest-dev/crowsnest/internal/redact"
	"github.com/crowsnest-dev/crowsnest/internal/setup"
	"github.com/crowsnest-dev/crowsnest/notify"
	"github.com/crowsnest-dev/crowsnest/notify/pipeline"
	"github.com/crowsnest-dev/crowsnest/notify/render"
)

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

// Send renders template name for the Application of in.AppPath and sends
// it, once, through the configured service to recipient, as the daemon
// would: the service's secrets are resolved (env:, file:, and the $key
// references the notifications Secret answers). A message the service
// skipped is an error too: nothing was sent.
func Send(ctx context.Context, in *Inputs, name, service, recipient string) (*SendReport, error) {
	set, secret, t, err := in.compiled(name)
	if err != nil {
		return nil, err
	}
	if _, ok := set.Config.Services[service]; !ok {
		known := sortedNames(set.Config.Services)
		if len(known) == 0 {
			return nil, fmt.Errorf("--service %q: no services are configured (--config's notifications.services or --notifications-cm's service.* keys)", service)
		}
		return nil, fmt.Errorf("--service %q: not a configured service (configured: %s)", service, strings.Join(known, ", "))
	}
	// Resolve the services' secrets as run does, on a copy.
	resolved, err := prepareServices(&set.Config, secret)
	if err != nil {
		return nil, err
	}
	svcConf := resolved.Services[service]
	typ := svcConf.Type()
	app, err := readApp(in.AppPath)
	if err != nil {
		return nil, err
	}
	msg, err := render.Once(pipeline.ServiceTemplate(name, t, service, typ),
		pipeline.TemplateVars(app, in.event(), set.Config.Context, typ))
	if err != nil {
		return nil, err
	}
	svc, err := setup.BuildService(service, svcConf, nil)
	if err != nil {
		return nil, fmt.Errorf("service %s: %w", service, err)
	}
	rep := &SendReport{Template: name, Service: service, ServiceType: typ, Recipient: recipient, Endpoint: serviceEndpoint(svcConf)}
	dest := notify.Destination{Service: service, Recipient: recipient}
	rep.Receipt, err = svc.Send(ctx, msg, dest)
	if err != nil {
		return nil, fmt.Errorf("sending template %s to %s (%s, %s): %w", name, rep.To(), typ, rep.Endpoint, redact.Error(err))
	}
	if rep.Receipt.Skipped {
		return nil, fmt.Errorf("template %s has nothing for %s service %s, nothing was sent: %s", name, typ, service, orDefault(rep.Receipt.Detail, "no message"))
	}
	return rep, nil
}

// To is the destination as people write it: service, or
// service:recipient.
func (rep *SendReport) To() string {
	if rep.Recipient == "" {
		return rep.Service
	}
	return rep.Service + ":" + rep.Recipient
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

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// serviceEndpoint is where a service sends, with secrets masked.
func serviceEndpoint(s config.Service) string {
	switch {
	case s.Slack != nil:
		return redact.URL(orDefault(s.Slack.APIURL, "https://slack.com/api/"))
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
