package webhook

import "github.com/prometheus/client_golang/prometheus"

// Request results, the "result" label of
// crowsnest_registry_webhook_requests_total.
const (
	ResultAccepted     = "accepted"
	ResultIgnored      = "ignored"
	ResultUnauthorized = "unauthorized"
	ResultBadRequest   = "bad_request"
	ResultTooLarge     = "too_large"
	// ResultRateLimited is an authenticated request over its source's
	// limit: real pushes are being dropped.
	ResultRateLimited = "rate_limited"
	// ResultUnauthenticatedRateLimited is a request that failed to
	// authenticate from a client that had already failed too often: a
	// flood or a sender with a stale secret, never a dropped push.
	ResultUnauthenticatedRateLimited = "unauthenticated_rate_limited"
	ResultUnknownSource              = "unknown_source"
	ResultMethodNotAllowed           = "method_not_allowed"
)

// Metrics counts webhook requests. A nil *Metrics counts nothing.
type Metrics struct {
	requests *prometheus.CounterVec
}

// NewMetrics creates the webhook metrics and registers them with reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "crowsnest_registry_webhook_requests_total",
			Help: "Registry webhook requests by source name (\"unknown\" for unconfigured paths) and result (accepted, ignored, unauthorized, bad_request, too_large, rate_limited, unauthenticated_rate_limited, unknown_source, method_not_allowed).",
		}, []string{"source", "result"}),
	}
	reg.MustRegister(m.requests)
	return m
}

func (m *Metrics) request(source, result string) {
	if m != nil {
		m.requests.WithLabelValues(source, result).Inc()
	}
}
