package imageupdaters

import "github.com/prometheus/client_golang/prometheus"

// Metrics count ImageUpdater problems and status writes. A nil *Metrics
// records nothing.
type Metrics struct {
	invalid *prometheus.GaugeVec
	writes  *prometheus.CounterVec
}

// NewMetrics creates the metrics and registers them with reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		invalid: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "crowsnest_imageupdater_problems",
			Help: "Fields of an ImageUpdater resource that crowsnest could not use (each left out: an image, an applicationRef), by resource.",
		}, []string{"imageupdater"}),
		writes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "crowsnest_imageupdater_status_writes_total",
			Help: "Writes of ImageUpdater status subresources, by result (success, conflict, error).",
		}, []string{"result"}),
	}
	reg.MustRegister(m.invalid, m.writes)
	return m
}

func (m *Metrics) problems(key string, n int) {
	if m != nil {
		m.invalid.WithLabelValues(key).Set(float64(n))
	}
}

func (m *Metrics) forget(key string) {
	if m != nil {
		m.invalid.DeleteLabelValues(key)
	}
}

func (m *Metrics) statusWrite(result string) {
	if m != nil {
		m.writes.WithLabelValues(result).Inc()
	}
}
