package kubeevents

import "github.com/prometheus/client_golang/prometheus"

// Outcomes of a recorded Event, as the "outcome" label of
// crowsnest_kube_events_total. Every call to Sink.Event ends in exactly
// one of them.
const (
	// OutcomeWritten: the record was written as an Event of its own
	// (created, or the count of an Event it repeats raised).
	OutcomeWritten = "written"
	// OutcomeAggregated: the record was folded into another one's Event,
	// whose count includes it.
	OutcomeAggregated = "aggregated"
	// OutcomeRefused: the apiserver refused the Event (forbidden, a
	// namespace being deleted, invalid) or kept failing.
	OutcomeRefused = "refused"
	// OutcomeDropped: MaxPending Events were waiting and none of the same
	// object, type and reason to join.
	OutcomeDropped = "dropped"
	// OutcomeUnflushed: still waiting when Shutdown's time ran out, or
	// recorded after it.
	OutcomeUnflushed = "unflushed"
)

// Metrics counts a Sink's records. A nil *Metrics records nothing.
type Metrics struct {
	total   *prometheus.CounterVec
	pending prometheus.Gauge
}

// NewMetrics creates the Event metrics and registers them with reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		total: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "crowsnest_kube_events_total",
			Help: "Kubernetes Events recorded, by outcome (written, aggregated, refused, dropped, unflushed).",
		}, []string{"outcome"}),
		pending: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "crowsnest_kube_events_pending",
			Help: "Kubernetes Events waiting to be written.",
		}),
	}
	for _, o := range []string{OutcomeWritten, OutcomeAggregated, OutcomeRefused, OutcomeDropped, OutcomeUnflushed} {
		m.total.WithLabelValues(o)
	}
	reg.MustRegister(m.total, m.pending)
	return m
}

func (m *Metrics) add(outcome string, n int) {
	if m == nil || n <= 0 {
		return
	}
	m.total.WithLabelValues(outcome).Add(float64(n))
}

func (m *Metrics) setPending(n int) {
	if m != nil {
		m.pending.Set(float64(n))
	}
}
