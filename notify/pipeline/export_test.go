package pipeline

import "github.com/prometheus/client_golang/prometheus"

// Evaluations is the series of crowsnest_notify_trigger_evaluations_total
// for trigger and result, for the tests of package pipeline_test.
func (m *Metrics) Evaluations(trigger, result string) prometheus.Counter {
	return m.evaluations.WithLabelValues(trigger, result)
}

// Pending is crowsnest_notify_pending_transitions, for the tests of
// package pipeline_test.
func (m *Metrics) Pending() prometheus.Gauge { return m.pending }

// RenderFailures is the series of crowsnest_notify_render_failures_total
// for service and reason, for the tests of package pipeline_test.
func (m *Metrics) RenderFailures(service, reason string) prometheus.Counter {
	return m.renderFailures.WithLabelValues(service, reason)
}
