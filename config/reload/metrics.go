package reload

import "github.com/prometheus/client_golang/prometheus"

// Metrics counts config reloads. A nil *Metrics records nothing.
type Metrics struct {
	reloads     *prometheus.CounterVec
	lastSuccess prometheus.Gauge
}

// NewMetrics creates the config metrics and registers them with reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		reloads: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "crowsnest_config_reloads_total",
			Help: "Config file reloads after a change, by result (success, error).",
		}, []string{"result"}),
		lastSuccess: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "crowsnest_config_last_reload_success_timestamp_seconds",
			Help: "Unix time of the last config load that was accepted.",
		}),
	}
	reg.MustRegister(m.reloads, m.lastSuccess)
	// Both series exist from the start, so alerts on errors see a zero.
	m.reloads.WithLabelValues("success")
	m.reloads.WithLabelValues("error")
	return m
}

func (m *Metrics) loaded(ok bool) {
	if m == nil {
		return
	}
	if ok {
		m.reloads.WithLabelValues("success").Inc()
		m.lastSuccess.SetToCurrentTime()
		return
	}
	m.reloads.WithLabelValues("error").Inc()
}
