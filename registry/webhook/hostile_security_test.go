package webhook

import (
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
)

// liveReceiver is the receiver mounted as documented behind a real HTTP
// server on 127.0.0.1, logging into a buffer.
type liveReceiver struct {
	url     string
	pushes  *pushes
	metrics *Metrics
	log     *bytes.Buffer
}

func startLiveReceiver(t *testing.T, cfg Config) *liveReceiver {
	t.Helper()
	lr := &liveReceiver{pushes: &pushes{}, metrics: NewMetrics(prometheus.NewRegistry()), log: &bytes.Buffer{}}
	cfg.Listener, cfg.Metrics = lr.pushes, lr.metrics
	cfg.Log = slog.New(slog.NewJSONHandler(&lockedWriter{w: lr.log}, &slog.HandlerOptions{Level: slog.LevelDebug}))
	rv, err := NewReceiver(cfg)
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/webhooks/registry/{source}", rv)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	lr.url = srv.URL + "/webhooks/registry/"
	return lr
}

// lockedWriter serialises writes of handlers running on many requests.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// post sends body to source with header and returns the status and the
// reply's text.
func (lr *liveReceiver) post(t *testing.T, source string, body io.Reader, header map[string]string) (int, string) {
	t.Helper()
	code, text, _ := lr.postHeader(t, source, body, header)
	return code, text
}

// postHeader is post that also returns the reply's header.
func (lr *liveReceiver) postHeader(t *testing.T, source string, body io.Reader, header map[string]string) (int, string, http.Header) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, lr.url+source, body)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", source, err)
	}
	defer resp.Body.Close()
	text, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	return resp.StatusCode, strings.TrimSpace(string(text)), resp.Header
}

// counts reads requests_total{source} for each result in results.
func (lr *liveReceiver) counts(t *testing.T, source string, results map[string]float64) map[string]float64 {
	t.Helper()
	got := make(map[string]float64, len(results))
	for result := range results {
		got[result] = lr.metrics.count(t, source, result)
	}
	return got
}

// zeros is an endless (up to n bytes) request body that counts what the
// server made the client send.
type zeros struct {
	n int64
	// sent is read by the test while the transport may still be writing
	// the rest of the body after the answer came.
	sent atomic.Int64
}

func (z *zeros) Read(p []byte) (int, error) {
	sent := z.sent.Load()
	if sent >= z.n {
		return 0, io.EOF
	}
	n := min(int64(len(p)), z.n-sent)
	clear(p[:n])
	z.sent.Add(n)
	return int(n), nil
}

func bearerHeader(token string) map[string]string {
	return map[string]string{"Authorization": "Bearer " + token}
}

// Hostile and malformed bodies over real HTTP: each gets a clear 4xx
// naming the problem, none reaches the Listener, the receiver reads at most its
// body limit of a huge one, and a good push afterwards goes through.
func TestReceiverRefusesHostileBodiesOverHTTP(t *testing.T) {
	const limit = 1 << 20
	lr := startLiveReceiver(t, Config{Sources: allSources(), MaxBodyBytes: limit})
	deep := strings.Repeat("[", 100_000)
	many := `{"events":[` + strings.Repeat(`{"action":"push","target":{"repository":"a","tag":"t"},"request":{"host":"h:1"}},`, 10_000)
	tests := []struct {
		name     string
		source   string
		body     string
		header   map[string]string
		wantCode int
		wantText string
	}{
		{"not JSON", "generic", "repository=x", bearerHeader(secret), 400, "invalid webhook payload: generic: "},
		{"truncated JSON", "generic", `{"repository":"ghcr.io/a/b","tag":"1.0`, bearerHeader(secret), 400, "invalid webhook payload: generic: "},
		{"wrong types", "generic", `{"repository":["ghcr.io/a/b"],"tag":7}`, bearerHeader(secret), 400, "invalid webhook payload: generic: "},
		{"nested 100,000 deep", "generic", deep, bearerHeader(secret), 400, "invalid webhook payload: generic: "},
		{"10,000 events, unterminated", "distribution", many, bearerHeader(secret), 400, "invalid webhook payload: distribution: "},
		{"repository ../..", "generic", `{"repository":"../../etc/passwd","tag":"1.0"}`, bearerHeader(secret), 400, `repository "../../etc/passwd"`},
		{"tag ../x", "generic", `{"repository":"ghcr.io/a/b","tag":"../x"}`, bearerHeader(secret), 400, `invalid tag "../x"`},
		{"tag with a newline", "generic", `{"repository":"ghcr.io/a/b","tag":"1.0\nimage: evil"}`, bearerHeader(secret), 400, `invalid tag "1.0\nimage: evil"`},
		{"tag with YAML", "generic", `{"repository":"ghcr.io/a/b","tag":"a: {b: c}"}`, bearerHeader(secret), 400, `invalid tag "a: {b: c}"`},
		{"1 KB tag", "generic", `{"repository":"ghcr.io/a/b","tag":"` + strings.Repeat("x", 1024) + `"}`, bearerHeader(secret), 400, "invalid tag"},
		{"bad digest", "generic", `{"repository":"ghcr.io/a/b","digest":"sha256:../../x"}`, bearerHeader(secret), 400, "invalid digest"},
		{"hostile body, no credentials", "generic", `{"repository":"../x"}`, nil, 401, "missing or invalid credentials"},
		{"a secret's prefix", "generic", `{"repository":"ghcr.io/a/b"}`, bearerHeader(secret[:len(secret)-1]), 401, "missing or invalid credentials"},
		{"the secret plus more", "generic", `{"repository":"ghcr.io/a/b"}`, bearerHeader(secret + "x"), 401, "missing or invalid credentials"},
		{"another source's secret", "harbor-dr", `{"repository":"ghcr.io/a/b"}`, bearerHeader(secret), 401, "missing or invalid credentials"},
		{"a signature of another body", "ghcr", readString(t, "ghcr_package.json"),
			map[string]string{GitHubSignatureHeader: signature(secret, []byte("{}")), "X-GitHub-Event": "package"}, 401, "missing or invalid credentials"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, text := lr.post(t, tt.source, strings.NewReader(tt.body), tt.header)
			if code != tt.wantCode || !strings.Contains(text, tt.wantText) {
				t.Errorf("answer %d %q, want %d containing %q", code, text, tt.wantCode, tt.wantText)
			}
		})
	}

	tooLarge := fmt.Sprintf("body larger than %d bytes", limit)
	for _, huge := range []struct {
		name     string
		header   map[string]string
		wantCode int
		wantText string
	}{
		// Without credentials the body is never read.
		{"no credentials", nil, http.StatusUnauthorized, "missing or invalid credentials"},
		// A token or a signature to check: read up to the limit.
		{"token", bearerHeader(secret), http.StatusRequestEntityTooLarge, tooLarge},
		{"signature", map[string]string{SignatureHeader: signature(secret, nil)}, http.StatusRequestEntityTooLarge, tooLarge},
	} {
		// 100 MiB, chunked: refused by the limit at the latest, not read
		// whole.
		body := &zeros{n: 100 << 20}
		code, text := lr.post(t, "generic", body, huge.header)
		if code != huge.wantCode || !strings.Contains(text, huge.wantText) {
			t.Errorf("100 MiB body, %s: %d %q, want %d %q", huge.name, code, text, huge.wantCode, huge.wantText)
		}
		if sent := body.sent.Load(); sent > 16*limit {
			t.Errorf("100 MiB body, %s: the client sent %d MiB, want the receiver to stop near %d MiB", huge.name, sent>>20, limit>>20)
		}
	}

	if got := lr.pushes.got(); len(got) != 0 {
		t.Fatalf("the Listener got %v from refused requests", got)
	}
	// Nothing else is disturbed: a good push still goes through.
	code, _ := lr.post(t, "generic", strings.NewReader(`{"repository":"ghcr.io/org/app","tag":"1.2.3"}`), bearerHeader(secret))
	want := []PushEvent{{Source: Generic, Repository: "ghcr.io/org/app", Tags: []string{"1.2.3"}}}
	if diff := cmp.Diff(want, lr.pushes.got()); code != http.StatusAccepted || diff != "" {
		t.Errorf("good push after the hostile ones: %d, pushes (-want +got):\n%s", code, diff)
	}
	if strings.Contains(lr.log.String(), secret) {
		t.Errorf("the receiver logged the secret:\n%s", lr.log)
	}
}

// Over real HTTP, a flood with wrong credentials is answered 429 with
// Retry-After once its client's failure budget is spent, its bodies
// unread; the source's own tokens are untouched.
func TestReceiverUnauthenticatedRateLimitOverHTTP(t *testing.T) {
	lr := startLiveReceiver(t, Config{Sources: allSources(), RateLimit: 0.001, Burst: 1,
		UnauthenticatedRateLimit: 0.001, UnauthenticatedBurst: 5})
	var codes []int
	var retryAfter string
	for range 8 {
		body := &zeros{n: 512 << 10}
		code, _, h := lr.postHeader(t, "quay", body, bearerHeader("wrong"))
		codes = append(codes, code)
		retryAfter = h.Get("Retry-After")
	}
	if diff := cmp.Diff([]int{401, 401, 401, 401, 401, 429, 429, 429}, codes); diff != "" {
		t.Errorf("flood answers (-want +got):\n%s", diff)
	}
	if s, err := strconv.Atoi(retryAfter); err != nil || s < 900 {
		t.Errorf("Retry-After = %q, want about 1000 seconds", retryAfter)
	}
	// The flood spent none of quay's one token.
	code, _ := lr.post(t, "quay?secret="+secret, bytes.NewReader(readTestdata(t, "quay.json")), nil)
	if code != http.StatusAccepted {
		t.Errorf("quay's own push after the flood: %d, want 202", code)
	}
}

// Without a secret a source exists only when unauthenticated access was
// asked for: the default refuses to start.
func TestReceiverAuthenticatesByDefault(t *testing.T) {
	for _, typ := range []SourceType{DockerHub, GHCR, Harbor, Quay, Distribution, Generic} {
		_, err := NewReceiver(Config{Listener: &pushes{}, Sources: []Source{{Type: typ}}})
		if err == nil || !strings.Contains(err.Error(), "secret is required") {
			t.Errorf("%s without a secret: %v, want refused", typ, err)
		}
	}
}

func readString(t *testing.T, name string) string {
	t.Helper()
	return string(readTestdata(t, name))
}
