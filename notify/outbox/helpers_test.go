package outbox_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/crowsnest-dev/crowsnest/internal/testwait"
	"github.com/crowsnest-dev/crowsnest/notify"
	"github.com/crowsnest-dev/crowsnest/notify/outbox"
)

// runOutbox starts o until the test ends (or stop is called) and fails
// the test if Start returns an error.
func runOutbox(t *testing.T, o *outbox.Outbox) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- o.Start(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("outbox Start: %v", err)
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

// fastOutbox is an Outbox with test-sized delays.
func fastOutbox(store outbox.Store, services map[string]notify.Service, m *outbox.Metrics) *outbox.Outbox {
	return &outbox.Outbox{
		Store: store, Services: services, Metrics: m,
		MaxAttempts: 5, RetryBaseDelay: 10 * time.Millisecond, RetryMaxDelay: 40 * time.Millisecond,
		AttemptTimeout: 2 * time.Second,
		RateLimits:     map[string]outbox.RateLimit{"slack": {PerSecond: -1}, "webhook.hook": {PerSecond: -1}, "webhook.hang": {PerSecond: -1}, "flaky": {PerSecond: -1}},
	}
}

// waitSettled waits until no worker holds a delivery: Enqueue, Redeliver,
// Start and rescans hand a delivery over before they return, and it is
// held until after its last send, so a duplicate handed over before the
// call has been sent by then (see Outbox.Depth).
func waitSettled(t *testing.T, o *outbox.Outbox) {
	t.Helper()
	testwait.For(t, "no delivery held", func() bool { return o.Depth() == 0 })
}

// waitRescanSettled waits for a whole rescan that read the store after the
// call, then for what it picked up to be sent: a record the store still
// showed pending would have been sent again by then.
func waitRescanSettled(t *testing.T, o *outbox.Outbox) {
	t.Helper()
	from := o.Rescans()
	testwait.For(t, "a rescan after this point", func() bool { return o.Rescans() >= from+2 })
	waitSettled(t, o)
}

// waitState waits until the delivery id reaches state and returns it.
func waitState(t *testing.T, o *outbox.Outbox, id string, state outbox.State) outbox.Record {
	t.Helper()
	var rec outbox.Record
	testwait.For(t, "delivery "+id+" to be "+string(state), func() bool {
		var err error
		rec, err = o.Store.Get(t.Context(), id)
		return err == nil && rec.State == state
	})
	return rec
}

// metric returns the value of a counter or gauge, or a histogram's
// sample count, with exactly the given labels (0 when absent).
func metric(t *testing.T, reg *prometheus.Registry, name string, labels map[string]string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			if !labelsMatch(m.GetLabel(), labels) {
				continue
			}
			switch {
			case m.Counter != nil:
				return m.GetCounter().GetValue()
			case m.Gauge != nil:
				return m.GetGauge().GetValue()
			case m.Histogram != nil:
				return float64(m.GetHistogram().GetSampleCount())
			}
		}
	}
	return 0
}

func labelsMatch(got []*dto.LabelPair, want map[string]string) bool {
	if len(got) != len(want) {
		return false
	}
	for _, l := range got {
		if want[l.GetName()] != l.GetValue() {
			return false
		}
	}
	return true
}
