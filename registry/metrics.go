package registry

import (
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// MaxHostSeries bounds the registries not in the operator's config
// (HostConfig.Configured) that get series of their own: an annotation may
// name any host, and each would add series that live as long as the
// process. Hosts past it are counted as OtherHost; a host that falls out
// of use (RetainHosts) gives its place back and its series are deleted.
const MaxHostSeries = 32

// OtherHost is the registry label of hosts past MaxHostSeries.
const OtherHost = "other"

// Metrics is the registry client's Prometheus instrumentation: every
// request to a registry, cache use, rate-limit waits and retries. A nil
// *Metrics records nothing.
type Metrics struct {
	mu sync.Mutex
	// hosts are the unconfigured hosts with series of their own.
	hosts map[string]bool

	requests  *prometheus.CounterVec
	latency   *prometheus.HistogramVec
	cache     *prometheus.CounterVec
	waits     *prometheus.CounterVec
	waitTime  *prometheus.CounterVec
	retries   *prometheus.CounterVec
	pollsVec  *prometheus.CounterVec
	changeVec *prometheus.CounterVec
	verdicts  *prometheus.CounterVec
}

// NewMetrics creates the registry metrics and registers them with reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "crowsnest_registry_requests_total",
			Help: "HTTP requests to registries by registry, kind (ping, token, list, head, manifest, blob, referrers) and status code (\"error\" when no response).",
		}, []string{"registry", "kind", "code"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "crowsnest_registry_request_duration_seconds",
			Help:    "Latency of registry HTTP requests until response headers, by registry and kind.",
			Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
		}, []string{"registry", "kind"}),
		cache: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "crowsnest_registry_cache_requests_total",
			Help: "Cache lookups by cache (tags, digest, manifest, config) and result (hit, miss, shared: joined an in-flight fetch).",
		}, []string{"cache", "result"}),
		waits: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "crowsnest_registry_rate_limit_waits_total",
			Help: "Requests that waited for a registry's rate limit, concurrency limit or Retry-After, by registry and reason.",
		}, []string{"registry", "reason"}),
		waitTime: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "crowsnest_registry_rate_limit_wait_seconds_total",
			Help: "Time requests spent waiting for a registry's limits, by registry.",
		}, []string{"registry"}),
		retries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "crowsnest_registry_retries_total",
			Help: "Registry requests retried, by registry and reason (429, 5xx, timeout, network, auth).",
		}, []string{"registry", "reason"}),
		pollsVec: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "crowsnest_registry_polls_total",
			Help: "Repository polls by result (unchanged, changed, error).",
		}, []string{"result"}),
		changeVec: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "crowsnest_registry_refresh_requests_total",
			Help: "Immediate repository refreshes asked for, by source (webhook, manual).",
		}, []string{"source"}),
		verdicts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "crowsnest_registry_signature_checks_total",
			Help: "Digests whose cosign signatures were checked against the registry (cached results not counted), by result (verified, no-signature, wrong-key, other-digest, bad-payload, error).",
		}, []string{"result"}),
	}
	reg.MustRegister(m.requests, m.latency, m.cache, m.waits, m.waitTime, m.retries, m.pollsVec, m.changeVec, m.verdicts)
	return m
}

// hostLabel is the registry label of host: its own name when the
// operator configured it or while fewer than MaxHostSeries other hosts
// have theirs, else OtherHost.
func (m *Metrics) hostLabel(host string, configured bool) string {
	if m == nil || configured {
		return host
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.hosts[host] {
		return host
	}
	if len(m.hosts) >= MaxHostSeries {
		return OtherHost
	}
	if m.hosts == nil {
		m.hosts = map[string]bool{}
	}
	m.hosts[host] = true
	return host
}

// RetainHosts deletes the series of the unconfigured hosts (named as
// go-containerregistry names them, "index.docker.io" for Docker Hub) that
// inUse does not list, and gives their places back.
func (m *Metrics) RetainHosts(inUse map[string]bool) {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for host := range m.hosts {
		if inUse[host] {
			continue
		}
		delete(m.hosts, host)
		l := prometheus.Labels{"registry": host}
		m.requests.DeletePartialMatch(l)
		m.latency.DeletePartialMatch(l)
		m.waits.DeletePartialMatch(l)
		m.waitTime.DeletePartialMatch(l)
		m.retries.DeletePartialMatch(l)
	}
}

func (m *Metrics) request(host, kind string, code int, d time.Duration) {
	if m == nil {
		return
	}
	c := "error"
	if code > 0 {
		c = strconv.Itoa(code)
	}
	m.requests.WithLabelValues(host, kind, c).Inc()
	m.latency.WithLabelValues(host, kind).Observe(d.Seconds())
}

func (m *Metrics) cacheResult(cache, result string) {
	if m != nil {
		m.cache.WithLabelValues(cache, result).Inc()
	}
}

func (m *Metrics) waited(host, reason string, d time.Duration) {
	if m != nil {
		m.waits.WithLabelValues(host, reason).Inc()
		m.waitTime.WithLabelValues(host).Add(d.Seconds())
	}
}

func (m *Metrics) retry(host, reason string) {
	if m != nil {
		m.retries.WithLabelValues(host, reason).Inc()
	}
}

func (m *Metrics) poll(result string) {
	if m != nil {
		m.pollsVec.WithLabelValues(result).Inc()
	}
}

func (m *Metrics) refresh(source string) {
	if m != nil {
		m.changeVec.WithLabelValues(source).Inc()
	}
}

func (m *Metrics) signatureCheck(result string) {
	if m != nil {
		m.verdicts.WithLabelValues(result).Inc()
	}
}
