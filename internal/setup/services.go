package setup

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/crowsnest-dev/crowsnest/config"
	"github.com/crowsnest-dev/crowsnest/notify"
	"github.com/crowsnest-dev/crowsnest/notify/outbox"
	"github.com/crowsnest-dev/crowsnest/notify/services"
)

// CloneService copies the blocks ResolveSecrets writes to.
func CloneService(s config.Service) config.Service {
	if s.Slack != nil {
		c := *s.Slack
		s.Slack = &c
	}
	if s.Webhook != nil {
		c := *s.Webhook
		c.Headers = append([]config.Header(nil), c.Headers...)
		if c.BasicAuth != nil {
			b := *c.BasicAuth
			c.BasicAuth = &b
		}
		s.Webhook = &c
	}
	if s.Email != nil {
		c := *s.Email
		s.Email = &c
	}
	if s.Ext != nil {
		s.Ext = s.Ext.Clone()
	}
	return s
}

// BuildServices builds a sender per configured service. Errors name the
// service and the setting, never a secret.
func BuildServices(n *config.Notifications, threads notify.ThreadStore) (map[string]notify.Service, error) {
	out := map[string]notify.Service{}
	var errs []error
	for name, s := range n.Services {
		svc, err := BuildService(name, s, threads)
		if err != nil {
			errs = append(errs, fmt.Errorf("service %s: %w", name, err))
			continue
		}
		out[name] = outbox.WithRateLimit(svc, serviceRateLimit(s))
	}
	return out, errors.Join(errs...)
}

// serviceRateLimit is the outbox's pace for s: its rateLimit, or its
// type's default.
func serviceRateLimit(s config.Service) outbox.RateLimit {
	rl := config.DefaultServiceRateLimit(s.Type())
	if s.RateLimit != nil {
		rl = *s.RateLimit
	}
	if rl.PerSecond == 0 {
		return outbox.RateLimit{PerSecond: -1}
	}
	burst := rl.Burst
	if burst == 0 {
		burst = max(1, int(math.Ceil(rl.PerSecond)))
	}
	return outbox.RateLimit{PerSecond: rl.PerSecond, Burst: burst}
}

// BuildService builds the sender of one configured service; threads keeps
// Slack threads (nil: none).
func BuildService(name string, s config.Service, threads notify.ThreadStore) (notify.Service, error) {
	switch {
	case s.Slack != nil:
		c := s.Slack
		token, err := c.Token.Value()
		if err != nil {
			return nil, fmt.Errorf("token: %w", err)
		}
		opts := []notify.SlackOption{notify.WithThreads(threads), notify.WithSlackTLS(c.InsecureSkipVerify)}
		if c.APIURL != "" {
			opts = append(opts, notify.WithSlackAPIURL(c.APIURL))
		}
		if c.Username != "" {
			opts = append(opts, notify.WithSlackUsername(c.Username))
		}
		if c.Icon != "" {
			opts = append(opts, notify.WithSlackIcon(c.Icon))
		}
		if c.Timeout.Duration > 0 {
			opts = append(opts, notify.WithSlackTimeout(c.Timeout.Duration))
		}
		return notify.NewSlack(name, token, opts...)
	case s.Webhook != nil:
		c := s.Webhook
		opts := []notify.WebhookOption{notify.WithWebhookMethod(c.Method), notify.WithWebhookTLS(c.InsecureSkipVerify, nil)}
		if c.SendMessage {
			opts = append(opts, notify.WithMessageBody())
		}
		if c.Timeout.Duration > 0 {
			opts = append(opts, notify.WithWebhookTimeout(c.Timeout.Duration))
		}
		for _, h := range c.Headers {
			opts = append(opts, notify.WithHeader(h.Name, h.Value))
		}
		if c.BasicAuth != nil {
			pw, err := c.BasicAuth.Password.Value()
			if err != nil {
				return nil, fmt.Errorf("basicAuth.password: %w", err)
			}
			opts = append(opts, notify.WithBasicAuth(c.BasicAuth.Username, pw))
		}
		if !c.Bearer.IsZero() {
			tok, err := c.Bearer.Value()
			if err != nil {
				return nil, fmt.Errorf("bearer: %w", err)
			}
			opts = append(opts, notify.WithBearerToken(tok))
		}
		if !c.HMACSecret.IsZero() {
			sec, err := c.HMACSecret.Value()
			if err != nil {
				return nil, fmt.Errorf("hmacSecret: %w", err)
			}
			opts = append(opts, notify.WithHMAC([]byte(sec), c.HMACHeader))
		}
		return notify.NewWebhook(name, c.URL, opts...)
	case s.Email != nil:
		return buildEmail(name, s.Email)
	case s.Ext != nil:
		return BuildExt(name, s.Ext, services.Options{})
	case s.Unsupported != "":
		return unsupportedService{typ: s.Unsupported}, nil
	}
	return nil, errors.New("no service type block")
}

// BuildExt builds the sender of a service of a type from package
// services.
func BuildExt(name string, e *config.ExtService, o services.Options) (notify.Service, error) {
	k, ok := services.Lookup(e.Type)
	if !ok {
		return nil, fmt.Errorf("service type %q not supported by crowsnest", e.Type)
	}
	return k.New(name, e.Settings, o)
}

// unsupportedService stands for an argocd-notifications-cm service of a
// type crowsnest cannot send to: every delivery dead-letters at once with
// the reason, so the message shows in the delivery log, the metrics and
// the error log instead of going nowhere.
type unsupportedService struct{ typ string }

func (u unsupportedService) Send(context.Context, notify.Notification, notify.Destination) (notify.Receipt, error) {
	return notify.Receipt{}, notify.Permanent(fmt.Errorf("service type %q is not supported by crowsnest; see docs/notifications.md#services", u.typ))
}

// emailService sends a body that starts with '<' as HTML and anything
// else as text, as the email template's body is documented to.
type emailService struct{ text, html notify.Service }

var _ notify.Service = emailService{}

// Send implements notify.Service.
func (e emailService) Send(ctx context.Context, n notify.Notification, d notify.Destination) (notify.Receipt, error) {
	if strings.HasPrefix(strings.TrimSpace(n.Message), "<") {
		return e.html.Send(ctx, n, d)
	}
	return e.text.Send(ctx, n, d)
}

func buildEmail(name string, c *config.EmailService) (notify.Service, error) {
	opts := []notify.EmailOption{notify.WithEmailTLS(notify.TLSMode(c.TLS), c.InsecureSkipVerify, nil)}
	if c.Timeout.Duration > 0 {
		opts = append(opts, notify.WithEmailTimeout(c.Timeout.Duration))
	}
	if c.Username != "" {
		pw, err := c.Password.Value()
		if err != nil {
			return nil, fmt.Errorf("password: %w", err)
		}
		opts = append(opts, notify.WithEmailAuth("", c.Username, pw))
	}
	text, err := notify.NewEmail(name, c.Host, c.Port, c.From, append(slices.Clone(opts), notify.WithHTML(false))...)
	if err != nil {
		return nil, err
	}
	html, err := notify.NewEmail(name, c.Host, c.Port, c.From, append(slices.Clone(opts), notify.WithHTML(true))...)
	if err != nil {
		return nil, err
	}
	return emailService{text: text, html: html}, nil
}
