package daemon

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestKubeVerb(t *testing.T) {
	const apps = "/apis/argoproj.io/v1alpha1/namespaces/argocd/applications"
	tests := []struct {
		name, method, url string
		want              [2]string
	}{
		{"list of a namespace", http.MethodGet, apps + "?limit=500", [2]string{"list", "applications"}},
		{"list of all namespaces", http.MethodGet, "/apis/argoproj.io/v1alpha1/applications", [2]string{"list", "applications"}},
		{"watch", http.MethodGet, apps + "?watch=true&resourceVersion=5", [2]string{"watch", "applications"}},
		{"get", http.MethodGet, apps + "/web", [2]string{"get", "applications"}},
		{"patch", http.MethodPatch, apps + "/web", [2]string{"patch", "applications"}},
		{"status subresource", http.MethodPut, apps + "/web/status", [2]string{"update", "applications/status"}},
		{"event create", http.MethodPost, "/api/v1/namespaces/argocd/events", [2]string{"create", "events"}},
		{"namespace object", http.MethodGet, "/api/v1/namespaces/argocd", [2]string{"get", "namespaces"}},
		{"delete", http.MethodDelete, "/api/v1/namespaces/argocd/configmaps/x", [2]string{"delete", "configmaps"}},
		{"delete collection", http.MethodDelete, "/api/v1/namespaces/argocd/configmaps", [2]string{"deletecollection", "configmaps"}},
		{"discovery", http.MethodGet, "/apis/argoproj.io/v1alpha1", [2]string{"get", "discovery"}},
		{"version", http.MethodGet, "/version", [2]string{"get", "discovery"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			verb, resource := kubeVerb(httptest.NewRequest(tt.method, tt.url, http.NoBody))
			if diff := cmp.Diff(tt.want, [2]string{verb, resource}); diff != "" {
				t.Errorf("kubeVerb(%s %s) (-want +got):\n%s", tt.method, tt.url, diff)
			}
		})
	}
}

// Every request through the wrapped transport is counted once with its
// verb, resource and code, and timed.
func TestKubeRequestMetricsCount(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPatch {
			w.WriteHeader(http.StatusConflict)
		}
	}))
	t.Cleanup(srv.Close)
	reg := prometheus.NewRegistry()
	m := newKubeRequestMetrics(reg)
	client := &http.Client{Transport: m.wrap(http.DefaultTransport)}
	send := func(method, path string) {
		t.Helper()
		req, err := http.NewRequestWithContext(t.Context(), method, srv.URL+path, http.NoBody)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
	}
	const app = "/apis/argoproj.io/v1alpha1/namespaces/a/applications/web"
	send(http.MethodGet, app)
	send(http.MethodGet, app)
	send(http.MethodPatch, app)
	want := `
# HELP crowsnest_kube_requests_total Requests to the kube-apiserver by verb (get, list, watch, create, update, patch, delete), resource and HTTP code ("error" without a response).
# TYPE crowsnest_kube_requests_total counter
crowsnest_kube_requests_total{code="200",resource="applications",verb="get"} 2
crowsnest_kube_requests_total{code="409",resource="applications",verb="patch"} 1
`
	if err := testutil.CollectAndCompare(m.requests, strings.NewReader(want)); err != nil {
		t.Error(err)
	}
	if n := testutil.CollectAndCount(m.duration); n != 2 {
		t.Errorf("%d duration series, want 2 (get and patch)", n)
	}
}
