package webhook

import (
	"bytes"
	"context"
	"encoding/hex"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

const secret = "s3cret-value"

// pushes is a Listener that records what it heard.
type pushes struct {
	mu     sync.Mutex
	events []PushEvent
}

func (p *pushes) Pushed(_ context.Context, ev PushEvent) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.events = append(p.events, ev)
}

func (p *pushes) got() []PushEvent {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]PushEvent(nil), p.events...)
}

type fixture struct {
	mux     *http.ServeMux
	rv      *Receiver
	pushes  *pushes
	metrics *Metrics
}

// newFixture mounts a receiver the documented way. cfg.Listener and
// cfg.Metrics are filled in.
func newFixture(t *testing.T, cfg Config) *fixture {
	t.Helper()
	f := &fixture{mux: http.NewServeMux(), pushes: &pushes{}, metrics: NewMetrics(prometheus.NewRegistry())}
	cfg.Listener, cfg.Metrics = f.pushes, f.metrics
	rv, err := NewReceiver(cfg)
	if err != nil {
		t.Fatal(err)
	}
	f.rv = rv
	f.mux.Handle("/webhooks/registry/{source}", rv)
	return f
}

func (f *fixture) post(t *testing.T, target string, body []byte, header map[string]string) *httptest.ResponseRecorder {
	t.Helper()
	return f.postFrom(t, "192.0.2.1:1234", target, body, header)
}

// postFrom is post from the client at remoteAddr ("host:port", as
// net/http sets Request.RemoteAddr).
func (f *fixture) postFrom(t *testing.T, remoteAddr, target string, body []byte, header map[string]string) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequestWithContext(t.Context(), http.MethodPost, target, bytes.NewReader(body))
	req.RemoteAddr = remoteAddr
	for k, v := range header {
		req.Header.Set(k, v)
	}
	rec := httptest.NewRecorder()
	f.mux.ServeHTTP(rec, req)
	return rec
}

func signature(key string, body []byte) string {
	return "sha256=" + hex.EncodeToString(Sign([]byte(key), body))
}

func allSources() []Source {
	var out []Source
	for _, t := range []SourceType{DockerHub, GHCR, Harbor, Quay, Distribution, Generic} {
		out = append(out, Source{Type: t, Secret: []byte(secret)})
	}
	return append(out, Source{Name: "harbor-dr", Type: Harbor, Secret: []byte("other-secret")})
}

func TestReceiverAuthAndResults(t *testing.T) {
	dockerhub, ghcr := readTestdata(t, "dockerhub.json"), readTestdata(t, "ghcr_package.json")
	harbor, quay := readTestdata(t, "harbor.json"), readTestdata(t, "quay.json")
	dist, distPull := readTestdata(t, "distribution_push.json"), readTestdata(t, "distribution_pull.json")
	generic := readTestdata(t, "generic.json")
	ghEvent := map[string]string{"X-GitHub-Event": "package", GitHubSignatureHeader: signature(secret, ghcr)}
	hubEvent := []PushEvent{{Source: DockerHub, Repository: "docker.io/crowsnestdev/demo-app", Tags: []string{"v1.4.2"}}}
	harborEvent := []PushEvent{{Source: Harbor, Repository: "harbor.example.com/platform/nginx", Tags: []string{"1.27.3"},
		Digest: "sha256:1f0e2d3c4b5a69788796a5b4c3d2e1f00f1e2d3c4b5a69788796a5b4c3d2e1f0"}}
	genericEvent := []PushEvent{{Source: Generic, Repository: "registry.example.com:5000/payments/api", Tags: []string{"v5.2.0"},
		Digest: "sha256:c0ffee00c0ffee00c0ffee00c0ffee00c0ffee00c0ffee00c0ffee00c0ffee00"}}
	tests := []struct {
		name       string
		path       string
		body       []byte
		header     map[string]string
		wantCode   int
		wantResult string
		want       []PushEvent
	}{
		{"dockerhub query secret", "dockerhub?secret=" + secret, dockerhub, nil, 202, ResultAccepted, hubEvent},
		{"dockerhub bearer", "dockerhub", dockerhub, map[string]string{"Authorization": "Bearer " + secret}, 202, ResultAccepted, hubEvent},
		{"dockerhub wrong secret", "dockerhub?secret=nope", dockerhub, nil, 401, ResultUnauthorized, nil},
		{"dockerhub secret prefix only", "dockerhub?secret=s3cret", dockerhub, nil, 401, ResultUnauthorized, nil},
		{"dockerhub no secret", "dockerhub", dockerhub, nil, 401, ResultUnauthorized, nil},
		{"quay query secret", "quay?secret=" + secret, quay, nil, 202, ResultAccepted,
			[]PushEvent{{Source: Quay, Repository: "quay.io/acme/worker", Tags: []string{"2026.01.05", "latest"}}}},
		{"ghcr signed", "ghcr", ghcr, ghEvent, 202, ResultAccepted, []PushEvent{{Source: GHCR, Repository: "ghcr.io/crowsnest-dev/demo-app",
			Tags: []string{"v2.0.1"}, Digest: "sha256:4a1c7f5e0e6e9d5b1f2b7f0c3c9a8f6e5d4c3b2a19f8e7d6c5b4a39281706f5e"}}},
		{"ghcr signature of another body", "ghcr", ghcr, map[string]string{GitHubSignatureHeader: signature(secret, dockerhub)}, 401, ResultUnauthorized, nil},
		{"ghcr signed with another key", "ghcr", ghcr, map[string]string{GitHubSignatureHeader: signature("guess", ghcr)}, 401, ResultUnauthorized, nil},
		{"ghcr signature not hex", "ghcr", ghcr, map[string]string{GitHubSignatureHeader: "sha256=zz"}, 401, ResultUnauthorized, nil},
		{"ghcr signature without prefix", "ghcr", ghcr, map[string]string{GitHubSignatureHeader: strings.TrimPrefix(signature(secret, ghcr), "sha256=")}, 401, ResultUnauthorized, nil},
		{"ghcr bearer is not enough", "ghcr", ghcr, map[string]string{"Authorization": "Bearer " + secret}, 401, ResultUnauthorized, nil},
		{"ghcr ping", "ghcr", []byte(`{"zen":"Keep it logically awesome."}`), map[string]string{"X-GitHub-Event": "ping",
			GitHubSignatureHeader: signature(secret, []byte(`{"zen":"Keep it logically awesome."}`))}, 204, ResultIgnored, nil},
		{"harbor auth header", "harbor", harbor, map[string]string{"Authorization": secret}, 202, ResultAccepted, harborEvent},
		{"harbor bearer", "harbor", harbor, map[string]string{"Authorization": "Bearer " + secret}, 202, ResultAccepted, harborEvent},
		{"harbor query is not accepted", "harbor?secret=" + secret, harbor, nil, 401, ResultUnauthorized, nil},
		{"second harbor has its own secret", "harbor-dr", harbor, map[string]string{"Authorization": secret}, 401, ResultUnauthorized, nil},
		{"second harbor", "harbor-dr", harbor, map[string]string{"Authorization": "other-secret"}, 202, ResultAccepted, harborEvent},
		{"distribution bearer", "distribution", dist, map[string]string{"Authorization": "Bearer " + secret}, 202, ResultAccepted,
			[]PushEvent{{Source: Distribution, Repository: "registry.internal:5000/team/app", Tags: []string{"latest", "v0.9.0"},
				Digest: "sha256:5e6f7081920a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4"}}},
		{"distribution pull", "distribution", distPull, map[string]string{"Authorization": "Bearer " + secret}, 204, ResultIgnored, nil},
		{"generic hmac", "generic", generic, map[string]string{SignatureHeader: signature(secret, generic)}, 202, ResultAccepted, genericEvent},
		{"generic bearer", "generic", generic, map[string]string{"Authorization": "bearer " + secret}, 202, ResultAccepted, genericEvent},
		{"generic bad hmac", "generic", generic, map[string]string{SignatureHeader: signature(secret, dockerhub)}, 401, ResultUnauthorized, nil},
		{"bad JSON, authenticated", "generic", []byte(`{"repository":`), map[string]string{"Authorization": "Bearer " + secret}, 400, ResultBadRequest, nil},
		{"bad JSON, unauthenticated", "generic", []byte(`{"repository":`), nil, 401, ResultUnauthorized, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, Config{Sources: allSources()})
			rec := f.post(t, "/webhooks/registry/"+tt.path, tt.body, tt.header)
			if rec.Code != tt.wantCode {
				t.Errorf("status = %d, want %d (body %q)", rec.Code, tt.wantCode, rec.Body.String())
			}
			source, _, _ := strings.Cut(tt.path, "?")
			if got := f.metrics.count(t, source, tt.wantResult); got != 1 {
				t.Errorf("requests_total{source=%q,result=%q} = %v, want 1", source, tt.wantResult, got)
			}
			if diff := cmp.Diff(tt.want, f.pushes.got()); diff != "" {
				t.Errorf("pushes (-want +got):\n%s", diff)
			}
			if strings.Contains(rec.Body.String(), secret) {
				t.Errorf("response %q contains the secret", rec.Body.String())
			}
		})
	}
}

func TestReceiverBadJSONMessage(t *testing.T) {
	f := newFixture(t, Config{Sources: allSources()})
	rec := f.post(t, "/webhooks/registry/quay?secret="+secret, []byte(`{"docker_url": 1}`), nil)
	want := "invalid webhook payload: quay: decoding JSON: json: cannot unmarshal number into Go struct field .docker_url of type string\n"
	if diff := cmp.Diff(want, rec.Body.String()); diff != "" {
		t.Errorf("400 body (-want +got):\n%s", diff)
	}
}

func TestReceiverAllowUnauthenticated(t *testing.T) {
	f := newFixture(t, Config{AllowUnauthenticated: true, Sources: []Source{
		{Type: Generic}, {Name: "signed", Type: Generic, Secret: []byte(secret)},
	}})
	body := []byte(`{"repository": "example.com/app", "tag": "v1"}`)
	if rec := f.post(t, "/webhooks/registry/generic", body, nil); rec.Code != http.StatusAccepted {
		t.Errorf("source without secret: status = %d, want 202", rec.Code)
	}
	// A source that has a secret still requires it.
	if rec := f.post(t, "/webhooks/registry/signed", body, nil); rec.Code != http.StatusUnauthorized {
		t.Errorf("source with secret: status = %d, want 401", rec.Code)
	}
	want := []PushEvent{{Source: Generic, Repository: "example.com/app", Tags: []string{"v1"}}}
	if diff := cmp.Diff(want, f.pushes.got()); diff != "" {
		t.Errorf("pushes (-want +got):\n%s", diff)
	}
}

func TestReceiverDoesNotLogSecrets(t *testing.T) {
	var logs bytes.Buffer
	f := newFixture(t, Config{
		Sources: allSources(),
		Log:     slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
	})
	hub := readTestdata(t, "dockerhub.json")
	f.post(t, "/webhooks/registry/dockerhub?secret="+secret, hub, nil)
	f.post(t, "/webhooks/registry/dockerhub?secret=almost-"+secret, hub, nil)
	f.post(t, "/webhooks/registry/harbor", hub, map[string]string{"Authorization": "Bearer typo-" + secret})
	f.post(t, "/webhooks/registry/quay?secret="+secret, []byte("{"), nil)
	if !strings.Contains(logs.String(), "registry webhook unauthorized") {
		t.Fatalf("expected rejections in the log, got:\n%s", logs.String())
	}
	if strings.Contains(logs.String(), secret) {
		t.Errorf("log contains the secret:\n%s", logs.String())
	}
}

func (m *Metrics) count(t *testing.T, source, result string) float64 {
	t.Helper()
	return testutil.ToFloat64(m.requests.WithLabelValues(source, result))
}
