package watcher

import "github.com/prometheus/client_golang/prometheus"

// Metrics counts what the sources observe. A nil *Metrics counts nothing, so
// sources work without a registry in narrow tests.
type Metrics struct {
	eventsVec   *prometheus.CounterVec
	filteredVec *prometheus.CounterVec
	invalidVec  *prometheus.CounterVec
}

// NewMetrics creates the watcher metrics and registers them with reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		eventsVec: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "crowsnest_watch_events_total",
			Help: "Object changes handed to the engine, by kind and event type.",
		}, []string{"kind", "type"}),
		filteredVec: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "crowsnest_watch_events_filtered_total",
			Help: "Object updates dropped because no field crowsnest reads changed (status churn).",
		}, []string{"kind"}),
		invalidVec: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "crowsnest_watch_objects_invalid_total",
			Help: "Objects skipped because a field crowsnest reads has the wrong type.",
		}, []string{"kind"}),
	}
	reg.MustRegister(m.eventsVec, m.filteredVec, m.invalidVec)
	return m
}

func (m *Metrics) event(kind string, typ EventType) {
	if m != nil {
		m.eventsVec.WithLabelValues(kind, string(typ)).Inc()
	}
}

func (m *Metrics) filtered(kind string) {
	if m != nil {
		m.filteredVec.WithLabelValues(kind).Inc()
	}
}

func (m *Metrics) invalid(kind string) {
	if m != nil {
		m.invalidVec.WithLabelValues(kind).Inc()
	}
}
