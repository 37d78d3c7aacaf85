package notify_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/crowsnest-dev/crowsnest/notify"
)

// slackCall is one Web API request the fake Slack received.
type slackCall struct {
	Method string // chat.postMessage, chat.update
	Form   url.Values
}

// fakeSlack speaks enough of Slack's Web API for chat.postMessage and
// chat.update: it records form bodies and answers {"ok":true,"ts":...}.
type fakeSlack struct {
	*httptest.Server
	mu          sync.Mutex
	calls       []slackCall
	next        int
	rateLimited int // answer this many next calls with 429 Retry-After: 1
	errors      map[string]string
}

func newFakeSlack(t *testing.T) *fakeSlack {
	t.Helper()
	f := &fakeSlack{errors: map[string]string{}}
	f.Server = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.Close)
	return f
}

func (f *fakeSlack) serve(w http.ResponseWriter, r *http.Request) {
	method := strings.TrimPrefix(r.URL.Path, "/api/")
	if err := r.ParseForm(); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.rateLimited > 0 {
		f.rateLimited--
		f.calls = append(f.calls, slackCall{Method: method + " (429)", Form: r.PostForm})
		w.Header().Set("Retry-After", "1")
		w.WriteHeader(http.StatusTooManyRequests)
		return
	}
	f.calls = append(f.calls, slackCall{Method: method, Form: r.PostForm})
	w.Header().Set("Content-Type", "application/json")
	if e := f.errors[r.PostForm.Get("channel")]; e != "" {
		_, _ = fmt.Fprintf(w, `{"ok":false,"error":%q}`, e)
		return
	}
	ts := r.PostForm.Get("ts")
	if method == "chat.postMessage" {
		f.next++
		ts = fmt.Sprintf("1700000000.%06d", f.next)
	}
	channel := r.PostForm.Get("channel")
	if strings.HasPrefix(channel, "#") {
		channel = "C" + strings.ToUpper(strings.TrimPrefix(channel, "#"))
	}
	_ = json.NewEncoder(w).Encode(map[string]any{"ok": true, "channel": channel, "ts": ts,
		"message": map[string]any{"text": r.PostForm.Get("text"), "ts": ts}})
}

func (f *fakeSlack) Calls() []slackCall {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]slackCall(nil), f.calls...)
}

func (f *fakeSlack) APIURL() string { return f.URL + "/api/" }

// runOutbox starts o until the test ends (or stop is called) and fails
// the test if Start returns an error.
func runOutbox(t *testing.T, o *notify.Outbox) (stop func()) {
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
func fastOutbox(store notify.Store, services map[string]notify.Service, m *notify.Metrics) *notify.Outbox {
	return &notify.Outbox{
		Store: store, Services: services, Metrics: m,
		MaxAttempts: 5, RetryBaseDelay: 10 * time.Millisecond, RetryMaxDelay: 40 * time.Millisecond,
		AttemptTimeout: 2 * time.Second,
		RateLimits:     map[string]notify.RateLimit{"slack": {PerSecond: -1}, "webhook.hook": {PerSecond: -1}, "webhook.hang": {PerSecond: -1}, "flaky": {PerSecond: -1}},
	}
}

// waitFor polls cond every 10ms until it holds or 10s pass.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// waitState waits until the delivery id reaches state and returns it.
func waitState(t *testing.T, o *notify.Outbox, id string, state notify.State) notify.Record {
	t.Helper()
	var rec notify.Record
	waitFor(t, "delivery "+id+" to be "+string(state), func() bool {
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
