package outbox

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Delivery results, the result label of crowsnest_notify_deliveries_total:
// one per attempt.
const (
	ResultDelivered   = "delivered"
	ResultSkipped     = "skipped"      // the notification had nothing for the service
	ResultFailed      = "failed"       // will be retried
	ResultRateLimited = "rate_limited" // retried after the destination's Retry-After
	ResultDead        = "dead"         // dead-lettered
	// ResultConfirmed is a delivery whose message the destination already
	// had (notify.Confirmer) or the journal says was sent before a restart
	// (Journal): recorded, not sent again.
	ResultConfirmed = "confirmed"
)

// Metrics is the outbox's Prometheus instrumentation. A nil *Metrics
// records nothing.
type Metrics struct {
	deliveries  *prometheus.CounterVec
	duration    *prometheus.HistogramVec
	depth       prometheus.Gauge
	retries     *prometheus.CounterVec
	deadLetters *prometheus.CounterVec
	latency     *prometheus.HistogramVec
}

// NewMetrics creates the notification metrics and registers them with reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		deliveries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "crowsnest_notify_deliveries_total",
			Help: "Delivery attempts by service, trigger and result (delivered, skipped, failed, rate_limited, dead).",
		}, []string{"service", "trigger", "result"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "crowsnest_notify_delivery_duration_seconds",
			Help:    "Time one delivery attempt took, by service.",
			Buckets: []float64{.01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
		}, []string{"service"}),
		depth: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "crowsnest_notify_outbox_depth",
			Help: "Deliveries recorded and not yet delivered or dead-lettered.",
		}),
		retries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "crowsnest_notify_retries_total",
			Help: "Delivery attempts that will be retried (failures and rate limits), by service.",
		}, []string{"service"}),
		deadLetters: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "crowsnest_notify_dead_letters_total",
			Help: "Deliveries given up on, by service.",
		}, []string{"service"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "crowsnest_notify_latency_seconds",
			Help:    "From crowsnest observing the change a message is about (an Application update, its own event) to the destination accepting the message, retries included, by service. Messages sent after a restart or failover are not counted.",
			Buckets: []float64{.005, .01, .025, .05, .075, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300},
		}, []string{"service"}),
	}
	reg.MustRegister(m.deliveries, m.duration, m.depth, m.retries, m.deadLetters, m.latency)
	return m
}

func (m *Metrics) attempt(service, trigger, result string, d time.Duration) {
	if m == nil {
		return
	}
	m.deliveries.WithLabelValues(service, trigger, result).Inc()
	m.duration.WithLabelValues(service).Observe(d.Seconds())
	switch result {
	case ResultFailed, ResultRateLimited:
		m.retries.WithLabelValues(service).Inc()
	case ResultDead:
		m.deadLetters.WithLabelValues(service).Inc()
	}
}

// delivered counts the latency of a message whose change was observed
// (Delivery.ObservedAt set) latency before the destination accepted it.
func (m *Metrics) delivered(service string, latency time.Duration) {
	if m != nil {
		m.latency.WithLabelValues(service).Observe(latency.Seconds())
	}
}

func (m *Metrics) setDepth(n int) {
	if m != nil {
		m.depth.Set(float64(n))
	}
}
