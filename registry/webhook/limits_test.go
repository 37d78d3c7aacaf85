package webhook

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/time/rate"
)

func TestReceiverBodyLimit(t *testing.T) {
	const limit = 64
	signed := func(size int) map[string]string {
		return map[string]string{SignatureHeader: signature(secret, bytes.Repeat([]byte(" "), size))}
	}
	tests := []struct {
		name       string
		size       int
		header     map[string]string
		wantCode   int
		wantResult string
	}{
		// At the limit the body is read whole and reaches the parser.
		{"token, at limit", limit, bearerHeader(secret), http.StatusBadRequest, ResultBadRequest},
		{"token, one byte over", limit + 1, bearerHeader(secret), http.StatusRequestEntityTooLarge, ResultTooLarge},
		{"token, far over", 10 * limit, bearerHeader(secret), http.StatusRequestEntityTooLarge, ResultTooLarge},
		{"signed, at limit", limit, signed(limit), http.StatusBadRequest, ResultBadRequest},
		// A signature is checked against the body, so the body is read.
		{"signed, one byte over", limit + 1, signed(limit + 1), http.StatusRequestEntityTooLarge, ResultTooLarge},
		{"forged signature, far over", 10 * limit, signed(0), http.StatusRequestEntityTooLarge, ResultTooLarge},
		// Without credentials the body is not read at all.
		{"no credentials, far over", 10 * limit, nil, http.StatusUnauthorized, ResultUnauthorized},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, Config{Sources: allSources(), MaxBodyBytes: limit})
			rec := f.post(t, "/webhooks/registry/generic", bytes.Repeat([]byte(" "), tt.size), tt.header)
			if rec.Code != tt.wantCode {
				t.Errorf("status = %d, want %d", rec.Code, tt.wantCode)
			}
			if got := f.metrics.count(t, "generic", tt.wantResult); got != 1 {
				t.Errorf("requests_total{result=%q} = %v, want 1", tt.wantResult, got)
			}
		})
	}
}

func TestReceiverRateLimit(t *testing.T) {
	// One token an hour and a burst of two: the third request in a row
	// is refused whatever the machine's speed.
	f := newFixture(t, Config{Sources: allSources(), RateLimit: rate.Every(time.Hour), Burst: 2})
	body := readTestdata(t, "dockerhub.json")
	var codes []int
	for range 3 {
		codes = append(codes, f.post(t, "/webhooks/registry/dockerhub?secret="+secret, body, nil).Code)
	}
	rec := f.post(t, "/webhooks/registry/dockerhub?secret="+secret, body, nil)
	// Buckets are per source: another source is unaffected.
	other := f.post(t, "/webhooks/registry/quay?secret="+secret, readTestdata(t, "quay.json"), nil)
	codes = append(codes, rec.Code, other.Code)
	want := []int{202, 202, 429, 429, 202}
	if diff := cmp.Diff(want, codes); diff != "" {
		t.Errorf("status codes (-want +got):\n%s", diff)
	}
	retry, err := strconv.Atoi(rec.Header().Get("Retry-After"))
	if err != nil || retry < 3000 || retry > 3600 {
		t.Errorf("Retry-After = %q, want about an hour in seconds", rec.Header().Get("Retry-After"))
	}
	if got := f.metrics.count(t, "dockerhub", ResultRateLimited); got != 2 {
		t.Errorf("rate_limited count = %v, want 2", got)
	}
	if got := len(f.pushes.got()); got != 3 {
		t.Errorf("pushes heard = %d, want 3", got)
	}
}

func TestReceiverRouting(t *testing.T) {
	f := newFixture(t, Config{Sources: allSources()})
	rec := f.post(t, "/webhooks/registry/nexus", []byte("{}"), nil)
	if rec.Code != http.StatusNotFound || f.metrics.count(t, "unknown", ResultUnknownSource) != 1 {
		t.Errorf("unknown source: status %d, metric %v; want 404 counted as unknown", rec.Code, f.metrics.count(t, "unknown", ResultUnknownSource))
	}
	req := httptest.NewRequestWithContext(t.Context(), http.MethodGet, "/webhooks/registry/quay", nil)
	rec = httptest.NewRecorder()
	f.mux.ServeHTTP(rec, req)
	if rec.Code != http.StatusMethodNotAllowed || rec.Header().Get("Allow") != http.MethodPost {
		t.Errorf("GET: status %d, Allow %q; want 405 and POST", rec.Code, rec.Header().Get("Allow"))
	}

	// Without a {source} pattern the last path segment names the source.
	heard := &pushes{}
	rv, err := NewReceiver(Config{Sources: allSources(), Listener: heard})
	if err != nil {
		t.Fatal(err)
	}
	h := http.StripPrefix("/hooks", rv)
	req = httptest.NewRequestWithContext(t.Context(), http.MethodPost, "/hooks/quay?secret="+secret, bytes.NewReader(readTestdata(t, "quay.json")))
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if got := heard.got(); rec.Code != http.StatusAccepted || len(got) != 1 {
		t.Errorf("prefix-stripped mount: status %d, %d events; want 202 and 1", rec.Code, len(got))
	}
}

func TestNewReceiverErrors(t *testing.T) {
	onPush := &pushes{}
	key := []byte("k")
	tests := []struct {
		name    string
		cfg     Config
		wantErr string
	}{
		{"no Listener", Config{}, "webhook receiver: Listener is required"},
		{"missing secret", Config{Listener: onPush, Sources: []Source{{Type: Quay}}},
			`webhook source 0 ("quay"): secret is required (AllowUnauthenticated accepts unauthenticated requests)`},
		{"unknown type", Config{Listener: onPush, Sources: []Source{{Type: "nexus", Secret: key}}},
			`webhook source 0 ("nexus"): unknown type "nexus" (want dockerhub, ghcr, harbor, quay, distribution or generic)`},
		{"duplicate", Config{Listener: onPush, Sources: []Source{{Type: Harbor, Secret: key}, {Name: "harbor", Type: Harbor, Secret: key}}},
			`webhook source 1 ("harbor"): duplicate name`},
		{"bad name", Config{Listener: onPush, Sources: []Source{{Name: "Harbor Prod", Type: Harbor, Secret: key}}},
			`webhook source 0 ("Harbor Prod"): name must be lower-case letters, digits, '.', '_' or '-'`},
		{"bad registry", Config{Listener: onPush, Sources: []Source{{Type: Harbor, Secret: key, Registry: "bad host/x"}}},
			`webhook source 0 ("harbor"): registry: `},
		{"negative limit", Config{Listener: onPush, MaxBodyBytes: -1},
			"webhook receiver: MaxBodyBytes, rate limits, bursts and MaxClients must not be negative"},
		{"negative unauthenticated burst", Config{Listener: onPush, UnauthenticatedBurst: -1},
			"webhook receiver: MaxBodyBytes, rate limits, bursts and MaxClients must not be negative"},
		{"negative MaxClients", Config{Listener: onPush, MaxClients: -1},
			"webhook receiver: MaxBodyBytes, rate limits, bursts and MaxClients must not be negative"},
		{"valid", Config{Listener: onPush, Sources: allSources()}, ""},
		{"unauthenticated allowed", Config{Listener: onPush, AllowUnauthenticated: true, Sources: []Source{{Type: Quay}}}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := NewReceiver(tt.cfg)
			got := ""
			if err != nil {
				got = err.Error()
				if strings.HasSuffix(tt.wantErr, ": ") && strings.HasPrefix(got, tt.wantErr) {
					got = tt.wantErr // library detail after the stable prefix
				}
			}
			if diff := cmp.Diff(tt.wantErr, got); diff != "" {
				t.Errorf("error (-want +got):\n%s", diff)
			}
		})
	}
}
