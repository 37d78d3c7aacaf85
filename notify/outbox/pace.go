package outbox

import (
	"golang.org/x/time/rate"

	"github.com/crowsnest-dev/crowsnest/notify"
)

// SetServices replaces the services (after a config reload); their paces
// start afresh.
func (o *Outbox) SetServices(s map[string]notify.Service) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.Services = s
	o.limiters = map[string]*rate.Limiter{}
}

// Paced is a notify.Service with the pace the outbox keeps towards it.
type Paced interface {
	notify.Service
	RateLimit() RateLimit
}

// WithRateLimit returns svc paced at rl by the outbox (unless the
// outbox's RateLimits name the service).
func WithRateLimit(svc notify.Service, rl RateLimit) notify.Service { return pacedService{svc, rl} }

type pacedService struct {
	notify.Service
	rl RateLimit
}

func (p pacedService) RateLimit() RateLimit { return p.rl }

func (o *Outbox) limiter(service string) *rate.Limiter {
	o.mu.Lock()
	defer o.mu.Unlock()
	l := o.limiters[service]
	if l == nil {
		rl, ok := o.RateLimits[service]
		if p, paced := o.Services[service].(Paced); !ok && paced {
			rl, ok = p.RateLimit(), true
		}
		if !ok {
			rl = RateLimit{PerSecond: DefaultServiceRate, Burst: DefaultServiceBurst}
		}
		limit := rate.Limit(rl.PerSecond)
		if rl.PerSecond < 0 {
			limit = rate.Inf
		}
		l = rate.NewLimiter(limit, max(1, rl.Burst))
		o.limiters[service] = l
	}
	return l
}
