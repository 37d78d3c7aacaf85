package pipeline

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/crowsnest-dev/crowsnest/triggers"
)

// Metrics count trigger evaluations and what they led to.
type Metrics struct {
	evaluations    *prometheus.CounterVec
	renderFailures *prometheus.CounterVec
	pending        prometheus.Gauge
	unsupported    prometheus.Gauge
}

// Trigger evaluation results, the result label of
// crowsnest_notify_trigger_evaluations_total.
const (
	EvalTriggered = "triggered" // the condition is true
	EvalFalse     = "false"
	EvalError     = "error" // the condition failed to evaluate
)

// Reasons a rendered message is not enqueued, the reason label of
// crowsnest_notify_render_failures_total.
const (
	RenderError = "error" // a template failed to render
	// RenderRefused: the service would act on a repository the
	// Application may not use (Notifier.Repos).
	RenderRefused = "refused"
)

// NewMetrics creates the trigger metrics and registers them.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		evaluations: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "crowsnest_notify_trigger_evaluations_total",
			Help: "Trigger condition evaluations by trigger and result (triggered, false, error).",
		}, []string{"trigger", "result"}),
		renderFailures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "crowsnest_notify_render_failures_total",
			Help: "Messages not enqueued after a trigger fired, by service and reason (error: a template failed to render; refused: the service would act on a repository the Application may not use).",
		}, []string{"service", "reason"}),
		pending: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "crowsnest_notify_pending_transitions",
			Help: "Observed Application transitions waiting for trigger evaluation.",
		}),
		unsupported: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "crowsnest_notify_config_unsupported",
			Help: "Service types and template blocks in the notifications config in force that crowsnest cannot send (each logged as a warning; deliveries to such a service dead-letter).",
		}),
	}
	reg.MustRegister(m.evaluations, m.renderFailures, m.pending, m.unsupported)
	return m
}

func (m *Metrics) evaluated(results []triggers.Result) {
	if m == nil {
		return
	}
	for _, r := range results {
		res := EvalFalse
		switch {
		case r.Err != nil:
			res = EvalError
		case r.Triggered:
			res = EvalTriggered
		}
		m.evaluations.WithLabelValues(r.Trigger, res).Inc()
	}
}

func (m *Metrics) renderFailed(service, reason string) {
	if m != nil {
		m.renderFailures.WithLabelValues(service, reason).Inc()
	}
}

func (m *Metrics) addPending(n int) {
	if m != nil {
		m.pending.Add(float64(n))
	}
}
