package daemon

import (
	"net/http"
	"net/http/pprof"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// kubeRequestMetrics counts and times every request crowsnest sends to the
// kube-apiserver by Kubernetes verb and resource, after the client's rate
// limiter let it go: the benchmark harness (and an operator choosing
// --kube-api-qps) reads how many lists, gets, patches and Event creates a
// pass costs.
type kubeRequestMetrics struct {
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
}

func newKubeRequestMetrics(reg prometheus.Registerer) *kubeRequestMetrics {
	m := &kubeRequestMetrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "crowsnest_kube_requests_total",
			Help: "Requests to the kube-apiserver by verb (get, list, watch, create, update, patch, delete), resource and HTTP code (\"error\" without a response).",
		}, []string{"verb", "resource", "code"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "crowsnest_kube_request_duration_seconds",
			Help:    "Time from sending a kube-apiserver request to its response headers, by verb and resource.",
			Buckets: prometheus.ExponentialBuckets(0.001, 4, 8),
		}, []string{"verb", "resource"}),
	}
	reg.MustRegister(m.requests, m.duration)
	return m
}

// wrap is a rest.Config WrapTransport.
func (m *kubeRequestMetrics) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripFunc(func(r *http.Request) (*http.Response, error) {
		verb, resource := kubeVerb(r)
		start := time.Now()
		resp, err := rt.RoundTrip(r)
		code := "error"
		if err == nil {
			code = strconv.Itoa(resp.StatusCode)
		}
		m.requests.WithLabelValues(verb, resource, code).Inc()
		m.duration.WithLabelValues(verb, resource).Observe(time.Since(start).Seconds())
		return resp, err
	})
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// kubeVerb names a request the way the apiserver's audit log does: the
// verb from the method and whether the path names one object, and the
// resource (with its subresource, "applications/status"). Paths outside
// /api and /apis (discovery, /version) are resource "discovery".
func kubeVerb(r *http.Request) (verb, resource string) {
	segs := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	switch {
	case len(segs) >= 2 && segs[0] == "api":
		segs = segs[2:] // api/v1
	case len(segs) >= 3 && segs[0] == "apis":
		segs = segs[3:] // apis/group/version
	default:
		segs = nil
	}
	if len(segs) >= 3 && segs[0] == "namespaces" {
		segs = segs[2:] // namespaces/<ns>/<resource>...
	}
	named := len(segs) >= 2
	switch {
	case len(segs) == 0:
		resource = "discovery"
	case len(segs) >= 3:
		resource = segs[0] + "/" + segs[2]
	default:
		resource = segs[0]
	}
	switch r.Method {
	case http.MethodGet, http.MethodHead:
		switch {
		case r.URL.Query().Get("watch") == "true" || r.URL.Query().Get("watch") == "1":
			verb = "watch"
		case named || resource == "discovery":
			verb = "get"
		default:
			verb = "list"
		}
	case http.MethodPost:
		verb = "create"
	case http.MethodPut:
		verb = "update"
	case http.MethodPatch:
		verb = "patch"
	case http.MethodDelete:
		verb = "delete"
		if !named {
			verb = "deletecollection"
		}
	default:
		verb = strings.ToLower(r.Method)
	}
	return verb, resource
}

// pprofHandler serves Go's runtime profiles for --pprof-bind-address.
func pprofHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	return mux
}
