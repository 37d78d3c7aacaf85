package notify_test

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/crowsnest-dev/crowsnest/internal/testwait"
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
	// posted keeps the messages posted, by channel ID, for
	// conversations.history and conversations.replies.
	posted map[string][]fakeMessage
	// epoch is the seconds of the timestamps posts get (1700000000 when
	// zero): set it to now where conversations.history's "oldest" matters.
	epoch int64
	// unanswered posts: this many next chat.postMessage calls are posted
	// but get no answer until the caller gives up.
	unanswered int
}

type fakeMessage struct {
	TS       string          `json:"ts"`
	ThreadTS string          `json:"thread_ts,omitempty"`
	Text     string          `json:"text"`
	Metadata json.RawMessage `json:"metadata,omitempty"`
}

func newFakeSlack(t *testing.T) *fakeSlack {
	t.Helper()
	f := &fakeSlack{errors: map[string]string{}, posted: map[string][]fakeMessage{}}
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
	if method == "conversations.history" || method == "conversations.replies" {
		f.history(w, r.Form, method == "conversations.replies")
		return
	}
	ts := r.PostForm.Get("ts")
	channel := r.PostForm.Get("channel")
	if strings.HasPrefix(channel, "#") {
		channel = "C" + strings.ToUpper(strings.TrimPrefix(channel, "#"))
	}
	if method == "chat.postMessage" {
		f.next++
		ts = fmt.Sprintf("%d.%06d", cmp.Or(f.epoch, 1700000000), f.next)
		m := fakeMessage{TS: ts, ThreadTS: r.PostForm.Get("thread_ts"), Text: r.PostForm.Get("text")}
		if md := r.PostForm.Get("metadata"); md != "" {
			m.Metadata = json.RawMessage(md)
		}
		if f.posted == nil {
			f.posted = map[string][]fakeMessage{}
		}
		f.posted[channel] = append(f.posted[channel], m)
		if f.unanswered > 0 {
			f.unanswered--
			f.mu.Unlock()
			<-r.Context().Done()
			f.mu.Lock()
			return
		}
	}
	_ = json.NewEncoder(w).Encode(map[string]any{"ok": true, "channel": channel, "ts": ts,
		"message": map[string]any{"text": r.PostForm.Get("text"), "ts": ts}})
}

// history answers conversations.history (top-level messages) and
// conversations.replies (a thread's replies) of a channel ID since
// "oldest", newest first, "limit" per page, with metadata only when
// include_all_metadata is 1. f.mu is held.
func (f *fakeSlack) history(w http.ResponseWriter, form url.Values, replies bool) {
	channel := form.Get("channel")
	if !strings.HasPrefix(channel, "C") {
		_, _ = w.Write([]byte(`{"ok":false,"error":"channel_not_found"}`))
		return
	}
	oldest, _ := strconv.ParseFloat(form.Get("oldest"), 64)
	var out []fakeMessage
	for _, m := range slices.Backward(f.posted[channel]) {
		if ts, _ := strconv.ParseFloat(m.TS, 64); ts < oldest {
			continue
		}
		// Replies come with their parent, as Slack answers.
		inThread := m.ThreadTS == form.Get("ts") || m.TS == form.Get("ts")
		if (replies && !inThread) || (!replies && m.ThreadTS != "") {
			continue
		}
		if form.Get("include_all_metadata") != "1" {
			m.Metadata = nil
		}
		out = append(out, m)
	}
	start, _ := strconv.Atoi(form.Get("cursor"))
	limit, _ := strconv.Atoi(form.Get("limit"))
	if limit <= 0 {
		limit = 100
	}
	end := min(start+limit, len(out))
	next := ""
	if end < len(out) {
		next = strconv.Itoa(end)
	}
	_ = json.NewEncoder(w).Encode(map[string]any{"ok": true, "messages": out[min(start, end):end],
		"has_more": next != "", "response_metadata": map[string]any{"next_cursor": next}})
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

// waitSettled waits until no worker holds a delivery: Enqueue, Redeliver,
// Start and rescans hand a delivery over before they return, and it is
// held until after its last send, so a duplicate handed over before the
// call has been sent by then (see Outbox.Depth).
func waitSettled(t *testing.T, o *notify.Outbox) {
	t.Helper()
	testwait.For(t, "no delivery held", func() bool { return o.Depth() == 0 })
}

// waitRescanSettled waits for a whole rescan that read the store after the
// call, then for what it picked up to be sent: a record the store still
// showed pending would have been sent again by then.
func waitRescanSettled(t *testing.T, o *notify.Outbox) {
	t.Helper()
	from := o.Rescans()
	testwait.For(t, "a rescan after this point", func() bool { return o.Rescans() >= from+2 })
	waitSettled(t, o)
}

// waitState waits until the delivery id reaches state and returns it.
func waitState(t *testing.T, o *notify.Outbox, id string, state notify.State) notify.Record {
	t.Helper()
	var rec notify.Record
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
