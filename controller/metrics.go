package controller

import (
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/util/workqueue"
)

// Reconcile results, as the "result" label of crowsnest_reconcile_total.
const (
	ResultSuccess  = "success"
	ResultRequeue  = "requeue"
	ResultError    = "error"
	ResultTerminal = "terminal"
	// ResultWaiting is a reconcile that handed its worker back to wait
	// for a tag list (Result.Waiting); the key comes back when it lands.
	ResultWaiting = "waiting"
)

// Metrics is the engine's Prometheus instrumentation. A nil *Metrics
// records nothing.
type Metrics struct {
	reconciles  *prometheus.CounterVec
	duration    prometheus.Histogram
	leader      prometheus.Gauge
	apps        prometheus.Gauge
	queueDepth  *prometheus.GaugeVec
	queueAdds   *prometheus.CounterVec
	queueWait   *prometheus.HistogramVec
	queueWork   *prometheus.HistogramVec
	unfinished  *prometheus.GaugeVec
	longest     *prometheus.GaugeVec
	retries     *prometheus.CounterVec
	reconcileOK prometheus.Counter // cached child of reconciles for the hot path
}

// NewMetrics creates the engine metrics and registers them with reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		reconciles: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "crowsnest_reconcile_total",
			Help: "Reconciles of an Application key, by result (success, requeue, error, terminal, waiting).",
		}, []string{"result"}),
		duration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "crowsnest_reconcile_duration_seconds",
			Help:    "Time spent in one reconcile (not counting those that only started waiting for a tag list).",
			Buckets: prometheus.ExponentialBuckets(0.0005, 4, 10),
		}),
		leader: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "crowsnest_leader",
			Help: "1 while this replica is the leader and reconciles, else 0.",
		}),
		apps: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "crowsnest_applications",
			Help: "Applications the engine currently knows.",
		}),
		queueDepth: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "crowsnest_workqueue_depth",
			Help: "Keys waiting in the work queue.",
		}, []string{"name"}),
		queueAdds: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "crowsnest_workqueue_adds_total",
			Help: "Keys added to the work queue.",
		}, []string{"name"}),
		queueWait: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "crowsnest_workqueue_queue_duration_seconds",
			Help:    "Time a key waits in the work queue before a worker takes it.",
			Buckets: prometheus.ExponentialBuckets(0.0001, 4, 12),
		}, []string{"name"}),
		queueWork: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "crowsnest_workqueue_work_duration_seconds",
			Help:    "Time a worker holds a key.",
			Buckets: prometheus.ExponentialBuckets(0.0001, 4, 12),
		}, []string{"name"}),
		unfinished: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "crowsnest_workqueue_unfinished_work_seconds",
			Help: "Seconds of work in progress that has not finished; large values mean stuck workers.",
		}, []string{"name"}),
		longest: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "crowsnest_workqueue_longest_running_processor_seconds",
			Help: "Seconds the longest running worker has held its key.",
		}, []string{"name"}),
		retries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "crowsnest_workqueue_retries_total",
			Help: "Keys re-added after a delay: backoff after a failed reconcile, or a requested requeue.",
		}, []string{"name"}),
	}
	reg.MustRegister(m.reconciles, m.duration, m.leader, m.apps, m.queueDepth, m.queueAdds,
		m.queueWait, m.queueWork, m.unfinished, m.longest, m.retries)
	m.reconcileOK = m.reconciles.WithLabelValues(ResultSuccess)
	return m
}

func (m *Metrics) reconciled(result string, seconds float64) {
	if m == nil {
		return
	}
	if result == ResultSuccess {
		m.reconcileOK.Inc()
	} else {
		m.reconciles.WithLabelValues(result).Inc()
	}
	if result != ResultWaiting {
		m.duration.Observe(seconds)
	}
}

func (m *Metrics) setLeader(leading bool) {
	if m == nil {
		return
	}
	if leading {
		m.leader.Set(1)
	} else {
		m.leader.Set(0)
	}
}

func (m *Metrics) setApps(n int) {
	if m != nil {
		m.apps.Set(float64(n))
	}
}

// queueMetrics adapts Metrics to client-go's workqueue.MetricsProvider, so
// the queue's own instrumentation lands in our registry, not a global one.
type queueMetrics struct{ m *Metrics }

var _ workqueue.MetricsProvider = queueMetrics{}

func (q queueMetrics) NewDepthMetric(name string) workqueue.GaugeMetric {
	return q.m.queueDepth.WithLabelValues(name)
}

func (q queueMetrics) NewAddsMetric(name string) workqueue.CounterMetric {
	return q.m.queueAdds.WithLabelValues(name)
}

func (q queueMetrics) NewLatencyMetric(name string) workqueue.HistogramMetric {
	return q.m.queueWait.WithLabelValues(name)
}

func (q queueMetrics) NewWorkDurationMetric(name string) workqueue.HistogramMetric {
	return q.m.queueWork.WithLabelValues(name)
}

func (q queueMetrics) NewUnfinishedWorkSecondsMetric(name string) workqueue.SettableGaugeMetric {
	return q.m.unfinished.WithLabelValues(name)
}

func (q queueMetrics) NewLongestRunningProcessorSecondsMetric(name string) workqueue.SettableGaugeMetric {
	return q.m.longest.WithLabelValues(name)
}

func (q queueMetrics) NewRetriesMetric(name string) workqueue.CounterMetric {
	return q.m.retries.WithLabelValues(name)
}

// ImageMetrics count image updates and annotation problems.
type ImageMetrics struct {
	updates            *prometheus.CounterVec
	invalidAnnotations *prometheus.CounterVec
	pullRequests       *prometheus.CounterVec
}

// NewImageMetrics creates the image update metrics and registers them.
func NewImageMetrics(reg prometheus.Registerer) *ImageMetrics {
	m := &ImageMetrics{
		updates: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "crowsnest_image_updates_total",
			Help: "Image changes by write-back method and result (success, error, held, unavailable).",
		}, []string{"method", "result"}),
		invalidAnnotations: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "crowsnest_invalid_annotations_total",
			Help: "Malformed argocd-image-updater annotations found (counted when a problem appears or changes, not at every reconcile), by key (without the image alias).",
		}, []string{"key"}),
		pullRequests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "crowsnest_pull_requests_total",
			Help: "What pull-request write-backs did, by action: opened and updated count once per Application a write proposed for, merged and closed once per pull request. Forge API calls are crowsnest_forge_requests_total.",
		}, []string{"action"}),
	}
	reg.MustRegister(m.updates, m.invalidAnnotations, m.pullRequests)
	return m
}

func (m *ImageMetrics) pullRequest(action string) {
	if m != nil {
		m.pullRequests.WithLabelValues(action).Inc()
	}
}

func (m *ImageMetrics) update(method, result string, n int) {
	if m != nil {
		m.updates.WithLabelValues(method, result).Add(float64(n))
	}
}

func (m *ImageMetrics) invalidAnnotation(key string) {
	if m != nil {
		m.invalidAnnotations.WithLabelValues(key).Inc()
	}
}

// WindowMetrics report sync windows and what they hold.
type WindowMetrics struct {
	active *prometheus.GaugeVec
	held   prometheus.Gauge
	syncs  prometheus.Counter
}

// NewWindowMetrics creates the sync window metrics and registers them.
func NewWindowMetrics(reg prometheus.Registerer) *WindowMetrics {
	m := &WindowMetrics{
		active: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "crowsnest_sync_windows_active",
			Help: "Sync windows open now.",
		}, nil),
		held: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "crowsnest_image_updates_held",
			Help: "Applications with an image update a sync window holds.",
		}),
		syncs: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "crowsnest_window_syncs_requested_total",
			Help: "Argo CD syncs requested because an allow window with syncOnOpen opened.",
		}),
	}
	reg.MustRegister(m.active, m.held, m.syncs)
	return m
}

func (m *WindowMetrics) setActive(n int) {
	if m != nil {
		m.active.WithLabelValues().Set(float64(n))
	}
}

func (m *WindowMetrics) setHeld(n int) {
	if m != nil {
		m.held.Set(float64(n))
	}
}

func (m *WindowMetrics) syncRequested() {
	if m != nil {
		m.syncs.Inc()
	}
}
