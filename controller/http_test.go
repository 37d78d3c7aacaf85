package controller_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/crowsnest-dev/crowsnest/controller"
	"github.com/crowsnest-dev/crowsnest/internal/httpserver"
	"github.com/crowsnest-dev/crowsnest/internal/testwait"
)

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, url, http.NoBody)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(body)
}

// serve runs an httpserver on a free loopback port until the test ends.
func serve(t *testing.T, name string, h http.Handler) string {
	t.Helper()
	s := &httpserver.Server{Name: name, Addr: "127.0.0.1:0", Handler: h}
	addr, err := s.Listen()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("%s server: %v", name, err)
		}
	})
	return "http://" + addr.String()
}

func TestHealthAndMetricsEndpoints(t *testing.T) {
	reg := prometheus.NewRegistry()
	rec := &recorder{}
	e := &controller.Engine{
		Sources:    []controller.Source{fileSource(t, "web", "api")},
		Reconciler: rec,
		Metrics:    controller.NewMetrics(reg),
	}
	health := serve(t, "health", e.HealthHandler())
	metrics := serve(t, "metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))

	if code, body := get(t, health+"/readyz"); code != http.StatusServiceUnavailable || !strings.Contains(body, "not synced") {
		t.Errorf("/readyz before start = %d %q, want 503 naming the caches", code, body)
	}
	if code, _ := get(t, health+"/healthz"); code != http.StatusOK {
		t.Errorf("/healthz = %d, want 200", code)
	}
	runEngine(t, e)
	testwait.For(t, "both apps reconciled", func() bool { return len(rec.requests()) == 2 })
	if code, body := get(t, health+"/readyz"); code != http.StatusOK || body != "ok\n" {
		t.Errorf("/readyz after sync = %d %q, want 200 ok", code, body)
	}

	_, body := get(t, metrics+"/metrics")
	for _, want := range []string{
		`crowsnest_reconcile_total{result="success"} 2`,
		`crowsnest_reconcile_duration_seconds_count 2`,
		`crowsnest_workqueue_adds_total{name="applications"} 2`,
		`crowsnest_workqueue_depth{name="applications"} 0`,
		`crowsnest_workqueue_work_duration_seconds_count{name="applications"} 2`,
		`crowsnest_workqueue_queue_duration_seconds_count{name="applications"} 2`,
		`crowsnest_applications 2`,
		`crowsnest_leader 1`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
}
