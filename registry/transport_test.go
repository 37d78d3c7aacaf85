package registry

import (
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

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
	c := &Client{Hosts: oneHost{t: t, host: "registry.invalid", cfg: HostConfig{APIURL: api.URL}}}
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

// oneHost is Hosts for one host; the test fails when asked for another.
type oneHost struct {
	t    *testing.T
	host string
	cfg  HostConfig
}

func (o oneHost) HostConfig(host string) HostConfig {
	if host != o.host {
		o.t.Errorf("settings asked for %q", host)
	}
	return o.cfg
}
