package git

import (
	"time"

	"github.com/crowsnest-dev/crowsnest/writeback/forge"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics is the Git write-back's Prometheus instrumentation: every
// network and repository operation, push retries and cache evictions. A
// nil *Metrics records nothing.
type Metrics struct {
	ops       *prometheus.CounterVec
	latency   *prometheus.HistogramVec
	retries   prometheus.Counter
	evictions prometheus.Counter
	// Forge counts the forge API calls of pull-request write-backs.
	Forge *forge.Metrics
}

// Operation names for the op label.
const (
	opClone  = "clone"
	opFetch  = "fetch"
	opPush   = "push"
	opCommit = "commit"
)

// Results for the result label: success, rejected (a push that lost a
// race), auth (credentials refused) or error.
const (
	resultSuccess  = "success"
	resultRejected = "rejected"
	resultAuth     = "auth"
	resultError    = "error"
)

// NewMetrics creates the Git metrics and registers them with reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		ops: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "crowsnest_git_operations_total",
			Help: "Git operations by op (clone, fetch, push, commit) and result (success, rejected, auth, error).",
		}, []string{"op", "result"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "crowsnest_git_operation_duration_seconds",
			Help:    "Duration of Git operations by op.",
			Buckets: []float64{.01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120},
		}, []string{"op"}),
		retries: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "crowsnest_git_push_retries_total",
			Help: "Write-back attempts repeated after a rejected or failed push or fetch.",
		}),
		evictions: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "crowsnest_git_cache_evictions_total",
			Help: "Clones removed from the cache to keep it within its bounds.",
		}),
	}
	reg.MustRegister(m.ops, m.latency, m.retries, m.evictions)
	m.Forge = forge.NewMetrics(reg)
	return m
}

func (m *Metrics) op(op string, start time.Time, err error) {
	if m == nil {
		return
	}
	m.ops.WithLabelValues(op, resultOf(err)).Inc()
	m.latency.WithLabelValues(op).Observe(time.Since(start).Seconds())
}

func (m *Metrics) retry() {
	if m != nil {
		m.retries.Inc()
	}
}

func (m *Metrics) evicted() {
	if m != nil {
		m.evictions.Inc()
	}
}
