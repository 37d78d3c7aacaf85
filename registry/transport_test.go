package registry

import (
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestRetryAfter(t *testing.T) {
	now := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	tests := []struct {
		in     string
		want   time.Duration
		wantOK bool
	}{
		{in: "", wantOK: false},
		{in: "7", want: 7 * time.Second, wantOK: true},
		{in: " 0 ", want: 0, wantOK: true},
		{in: "-3", wantOK: false},
		{in: "Sun, 22 Nov 2026 10:00:30 GMT", want: 30 * time.Second, wantOK: true},
		{in: "Sun, 22 Nov 2026 09:00:00 GMT", want: 0, wantOK: true},
		{in: "soon", wantOK: false},
	}
	for _, tt := range tests {
		got, ok := retryAfter(tt.in, now)
		if diff := cmp.Diff([]any{tt.want, tt.wantOK}, []any{got, ok}); diff != "" {
			t.Errorf("retryAfter(%q) (-want +got):\n%s", tt.in, diff)
		}
	}
}

// TestAPIURLRedirectsRequests checks that a registry whose API lives
// elsewhere (registries.conf api_url) is reached there.
func TestAPIURLRedirectsRequests(t *testing.T) {
	var hits atomic.Int32
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		if r.URL.Path == "/v2/" {
			return
		}
		_, _ = w.Write([]byte(`{"name":"team/app","tags":["1","2"]}`))
	}))
	t.Cleanup(api.Close)
	c := &Client{Hosts: func(host string) HostConfig {
		if host != "registry.invalid" {
			t.Errorf("settings asked for %q", host)
		}
		return HostConfig{APIURL: api.URL}
	}}
	repo, err := ParseRepo("registry.invalid/team/app")
	if err != nil {
		t.Fatal(err)
	}
	got, err := c.ListTags(t.Context(), repo)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"1", "2"}, got); diff != "" || hits.Load() != 2 {
		t.Errorf("tags (-want +got):\n%s\nAPI hits %d, want 2 (ping, list)", diff, hits.Load())
	}
}

func TestBackoffStaysInBounds(t *testing.T) {
	tr, err := newHostTransport("h", HostConfig{RetryBaseDelay: 100 * time.Millisecond, RetryMaxDelay: time.Second}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	for attempt := 1; attempt < 70; attempt++ {
		d := tr.backoff(attempt)
		ceiling := min(100*time.Millisecond<<min(attempt-1, 20), time.Second)
		if d < ceiling/2 || d > ceiling {
			t.Errorf("attempt %d: backoff %v outside [%v, %v]", attempt, d, ceiling/2, ceiling)
		}
	}
}
