package forge

import (
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics count every forge API call, by forge kind, HTTP method and
// answer ("error" when none came), and time them.
type Metrics struct {
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
}

// NewMetrics creates the forge metrics and registers them.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "crowsnest_forge_requests_total",
			Help: "Forge API calls of pull-request write-backs, by forge kind, HTTP method and status code (\"error\": no answer).",
		}, []string{"forge", "method", "code"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "crowsnest_forge_request_duration_seconds",
			Help:    "Forge API call latency, by forge kind.",
			Buckets: []float64{0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30},
		}, []string{"forge"}),
	}
	reg.MustRegister(m.requests, m.duration)
	return m
}

// transport wraps base (nil: http.DefaultTransport) so that each call to
// a forge of kind is counted.
func (m *Metrics) transport(kind string, base http.RoundTripper) http.RoundTripper {
	if m == nil {
		return base
	}
	if base == nil {
		base = http.DefaultTransport
	}
	return countingTransport{m: m, kind: kind, base: base}
}

type countingTransport struct {
	m    *Metrics
	kind string
	base http.RoundTripper
}

func (t countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	start := time.Now()
	resp, err := t.base.RoundTrip(r)
	code := "error"
	if err == nil {
		code = strconv.Itoa(resp.StatusCode)
	}
	t.m.requests.WithLabelValues(t.kind, r.Method, code).Inc()
	t.m.duration.WithLabelValues(t.kind).Observe(time.Since(start).Seconds())
	return resp, err
}
