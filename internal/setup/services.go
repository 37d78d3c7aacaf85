package setup

import (
	"context"
	"errors"
	"fmt"
	"math"

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

// BuildService builds the sender of one configured service from its
// type's svc.Kind; threads keeps Slack threads (nil: none).
func BuildService(name string, s config.Service, threads notify.ThreadStore) (notify.Service, error) {
	return BuildWith(name, s, services.Options{Threads: threads})
}

// BuildWith builds the sender of s with o: `notify template render`
// replaces its transport and mailer with recorders.
func BuildWith(name string, s config.Service, o services.Options) (notify.Service, error) {
	if s.Unsupported != "" {
		return unsupportedService{typ: s.Unsupported}, nil
	}
	typ := s.Type()
	if typ == "" {
		return nil, errors.New("no service type block")
	}
	k, ok := services.Lookup(typ)
	if !ok {
		return nil, fmt.Errorf("service type %q not supported by crowsnest", typ)
	}
	return k.New(name, s.Settings(), o)
}

// unsupportedService stands for an argocd-notifications-cm service of a
// type crowsnest cannot send to: every delivery dead-letters at once with
// the reason, so the message shows in the delivery log, the metrics and
// the error log instead of going nowhere.
type unsupportedService struct{ typ string }

func (u unsupportedService) Send(context.Context, notify.Notification, notify.Destination) (notify.Receipt, error) {
	return notify.Receipt{}, notify.Permanent(fmt.Errorf("service type %q is not supported by crowsnest; see docs/notifications.md#services", u.typ))
}
