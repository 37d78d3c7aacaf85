package webhook

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/crowsnest-dev/crowsnest/internal/testreg"
	"github.com/crowsnest-dev/crowsnest/internal/testwait"
)

// e2eWait bounds waiting for the real registry's notifications; they
// normally arrive within milliseconds of the push.
const e2eWait = 30 * time.Second

// startHookServer serves a Receiver for one distribution source on
// 127.0.0.1 and returns the URL to configure in the registry.
func startHookServer(t *testing.T, metrics *Metrics, events chan<- PushEvent) string {
	t.Helper()
	rv, err := NewReceiver(Config{
		Sources:  []Source{{Type: Distribution, Secret: []byte("e2e-secret")}},
		Metrics:  metrics,
		Listener: pushChan(events),
	})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/webhooks/registry/{source}", rv)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv.URL + "/webhooks/registry/distribution"
}

// pushChan is a Listener that hands each push to a channel, never
// blocking the registry: when the channel is full the test has what it
// needs.
type pushChan chan<- PushEvent

func (c pushChan) Pushed(_ context.Context, ev PushEvent) {
	select {
	case c <- ev:
	default:
	}
}

func TestDistributionNotificationsE2E(t *testing.T) {
	events := make(chan PushEvent, 64)
	metrics := NewMetrics(prometheus.NewRegistry())
	reg := testreg.StartDistribution(t, testreg.DistributionOptions{
		Users:         map[string]string{"ci": "ci-pass"},
		NotifyURL:     startHookServer(t, metrics, events),
		NotifyHeaders: map[string]string{"Authorization": "Bearer e2e-secret"},
	})
	img, err := random.Image(256, 2)
	if err != nil {
		t.Fatal(err)
	}
	digest, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(reg.Ref(t, "team/app:v1.2.3"), img, remote.WithAuth(reg.Auth()), remote.WithContext(t.Context())); err != nil {
		t.Fatal(err)
	}
	want := PushEvent{Source: Distribution, Repository: reg.Host() + "/team/app", Tags: []string{"v1.2.3"}, Digest: digest.String()}
	timeout := time.After(e2eWait)
	for {
		select {
		case ev := <-events:
			if diff := cmp.Diff(want, ev); diff != "" {
				t.Fatalf("push event (-want +got):\n%s", diff)
			}
			if n := metrics.count(t, "distribution", ResultUnauthorized); n != 0 {
				t.Errorf("unauthorized deliveries = %v, want 0", n)
			}
			return
		case <-timeout:
			t.Fatalf("no push event within %s; registry log:\n%s", e2eWait, reg.Log())
		}
	}
}

func TestDistributionNotificationsWrongTokenE2E(t *testing.T) {
	events := make(chan PushEvent, 64)
	metrics := NewMetrics(prometheus.NewRegistry())
	reg := testreg.StartDistribution(t, testreg.DistributionOptions{
		NotifyURL:     startHookServer(t, metrics, events),
		NotifyHeaders: map[string]string{"Authorization": "Bearer not-the-secret"},
	})
	img, err := random.Image(64, 1)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(reg.Ref(t, "app:v1"), img, remote.WithContext(t.Context())); err != nil {
		t.Fatal(err)
	}
	registryLog := func() string { return "registry log:\n" + reg.Log() }
	testwait.Wait{Timeout: e2eWait, Detail: registryLog}.For(t, "a rejected delivery", func() bool {
		return metrics.count(t, "distribution", ResultUnauthorized) > 0
	})
	select {
	case ev := <-events:
		t.Errorf("the Listener heard an unauthenticated delivery: %+v", ev)
	default:
	}
}
