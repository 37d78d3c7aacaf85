package outbox_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/crowsnest-dev/crowsnest/config"
	"github.com/crowsnest-dev/crowsnest/internal/testenv"
	"github.com/crowsnest-dev/crowsnest/internal/testnotify"
	"github.com/crowsnest-dev/crowsnest/internal/testwait"
	"github.com/crowsnest-dev/crowsnest/notify"
	"github.com/crowsnest-dev/crowsnest/notify/outbox"
)

// slowStore is a MemoryStore whose Creates wait until released, as a
// write to a busy apiserver does, and may fail; it logs the writes it
// was asked for in order.
type slowStore struct {
	outbox.MemoryStore
	creating    atomic.Int32
	failCreates atomic.Int32

	mu      sync.Mutex
	release chan struct{} // Creates wait for it to close when not nil
	writes  []string
}

// hold makes the next Creates wait until the returned channel closes.
func (s *slowStore) hold() chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.release = make(chan struct{})
	return s.release
}

// warmUp delivers one message through o and forgets its writes: once it
// is delivered, o has read the store at Start and sends new deliveries
// early.
func (s *slowStore) warmUp(t *testing.T, o *outbox.Outbox, d outbox.Delivery) {
	t.Helper()
	rec, _, err := o.Enqueue(t.Context(), d)
	if err != nil {
		t.Fatal(err)
	}
	waitState(t, o, rec.ID, outbox.StateDelivered)
	s.mu.Lock()
	s.writes = nil
	s.mu.Unlock()
}

func (s *slowStore) Writes() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.writes)
}

func (s *slowStore) Create(ctx context.Context, rec outbox.Record) (bool, error) {
	s.mu.Lock()
	release := s.release
	s.mu.Unlock()
	if release != nil {
		s.creating.Add(1)
		select {
		case <-release:
		case <-ctx.Done():
			return false, ctx.Err()
		}
		s.creating.Add(-1)
	}
	// A write and its log line are one step to readers (Get).
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.failCreates.Add(-1) >= 0 {
		s.writes = append(s.writes, "create failed "+string(rec.State))
		return false, errors.New("etcdserver: request timed out")
	}
	made, err := s.MemoryStore.Create(ctx, rec)
	s.writes = append(s.writes, fmt.Sprintf("create %s made=%v", rec.State, made))
	return made, err
}

func (s *slowStore) Update(ctx context.Context, rec outbox.Record) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	err := s.MemoryStore.Update(ctx, rec)
	s.writes = append(s.writes, fmt.Sprintf("update %s err=%v", rec.State, err))
	return err
}

func (s *slowStore) Get(ctx context.Context, id string) (outbox.Record, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.MemoryStore.Get(ctx, id)
}

// A new delivery is sent while its record is being written, not after:
// the message does not wait for the store. Its delivered state is saved
// only once the record exists, and a key already recorded is not sent
// again.
func TestOutboxSendsNewDeliveriesWhileTheirRecordIsWritten(t *testing.T) {
	hook := newFlakyWebhook(t, 0)
	store := &slowStore{}
	reg := prometheus.NewRegistry()
	o := fastOutbox(store, map[string]notify.Service{"webhook.hook": webhookService(t, "hook", hook.URL)}, outbox.NewMetrics(reg))
	var logs testenv.LogBuffer
	o.Logger = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	runOutbox(t, o)
	store.warmUp(t, o, hookDelivery("warm-up", "argocd/warm-up", `{}`))
	release := store.hold()
	type result struct {
		rec     outbox.Record
		created bool
		err     error
	}
	done := make(chan result, 1)
	go func() {
		d := hookDelivery("k1", "argocd/web", `{"n":1}`)
		d.ObservedAt = time.Now().Add(-time.Second) // what it is about happened a second ago
		rec, created, err := o.Enqueue(t.Context(), d)
		done <- result{rec, created, err}
	}()
	testwait.For(t, "the message sent while its record is written", func() bool { return hook.delivered.Load() == 2 })
	if store.creating.Load() != 1 {
		t.Fatalf("the record's Create is not in flight (%d) when the message arrived", store.creating.Load())
	}
	// The worker saves the delivered state next: it says so and waits.
	testwait.For(t, "the worker to wait for the record", func() bool {
		return strings.Contains(logs.String(), "message sent before its record exists; its state waits for the record")
	})
	if w := store.Writes(); len(w) != 0 {
		t.Fatalf("writes before the record was created: %v", w)
	}
	close(release)
	r := <-done
	if r.err != nil || !r.created {
		t.Fatalf("Enqueue = %v, %v", r.created, r.err)
	}
	rec := waitState(t, o, r.rec.ID, outbox.StateDelivered)
	if rec.Attempts != 1 || rec.Receipt.ID == "" {
		t.Errorf("record = %+v, want delivered after 1 attempt with the sink's status", rec)
	}
	if want := []string{"create pending made=true", "update delivered err=<nil>"}; !slices.Equal(store.Writes(), want) {
		t.Errorf("writes = %v, want %v", store.Writes(), want)
	}
	// Its latency counts from when it was observed to the sink's answer,
	// not to the record (the warm-up observed nothing: not counted). The
	// worker counts it after saving the delivered state, which waitState
	// may see first.
	testwait.For(t, "the delivery's latency sample", func() bool { n, _ := latencySamples(t, reg); return n > 0 })
	if n, sum := latencySamples(t, reg); n != 1 || sum < 1 || sum > 5 {
		t.Errorf("latency histogram: %d samples summing %.3fs, want 1 of a little over 1s", n, sum)
	}
	// The notifier asking again (a retry after its own save failed) sends
	// nothing.
	if _, created, err := o.Enqueue(t.Context(), hookDelivery("k1", "argocd/web", `{"n":1}`)); err != nil || created {
		t.Fatalf("second Enqueue = %v, %v; want not created", created, err)
	}
	waitSettled(t, o)
	if n := hook.delivered.Load(); n != 2 {
		t.Errorf("%d messages, want 2 (the warm-up's and this one)", n)
	}
}

// When the record of a message already sent cannot be created, Enqueue
// reports the error (the notifier retries) and the worker writes the
// record as delivered itself, so the retry sends nothing.
func TestOutboxRecordsAnEarlySendWhoseCreateFailed(t *testing.T) {
	hook := newFlakyWebhook(t, 0)
	store := &slowStore{}
	o := fastOutbox(store, map[string]notify.Service{"webhook.hook": webhookService(t, "hook", hook.URL)}, nil)
	runOutbox(t, o)
	store.warmUp(t, o, hookDelivery("warm-up", "argocd/warm-up", `{}`))
	store.failCreates.Store(1)
	d := hookDelivery("k1", "argocd/web", `{"n":1}`)
	if _, _, err := o.Enqueue(t.Context(), d); err == nil {
		t.Fatal("Enqueue succeeded though the record's Create failed")
	}
	rec := waitState(t, o, outbox.DeliveryID(d.Key), outbox.StateDelivered)
	if rec.Attempts != 1 {
		t.Errorf("record = %+v, want delivered after 1 attempt", rec)
	}
	if _, created, err := o.Enqueue(t.Context(), d); err != nil || created {
		t.Fatalf("retried Enqueue = %v, %v; want not created", created, err)
	}
	waitSettled(t, o)
	if n := hook.delivered.Load(); n != 2 {
		t.Errorf("%d messages, want 2 (the warm-up's and this one)", n)
	}
	want := []string{"create failed pending", "update delivered err=delivery not found", "create delivered made=true", "create pending made=false"}
	if !slices.Equal(store.Writes(), want) {
		t.Errorf("writes = %v, want %v", store.Writes(), want)
	}
}

// A delivery asked for again from state an earlier process may have
// acted on (MaybeSent: the first look after a restart) is not sent early:
// it is recorded, then its destination is asked whether the earlier
// process sent it.
func TestOutboxAsksBeforeSendingWhatMayHaveBeenSent(t *testing.T) {
	f := testnotify.NewFakeSlack(t)
	f.SetEpoch(time.Now().Unix())
	delivery := func(key string) outbox.Delivery {
		return outbox.Delivery{Key: key, App: "argocd/" + key, Service: "slack", Recipient: "C0DEPLOYS",
			Notification: notify.Notification{Message: key}, MaybeSent: true}
	}
	// The earlier process posted "sent" ten minutes ago and died before
	// recording it; the restart took that long.
	sent := delivery("sent")
	f.SetEpoch(time.Now().Add(-10 * time.Minute).Unix())
	if _, err := f.Service(t, nil).Send(notify.WithDeliveryID(t.Context(), outbox.DeliveryID(sent.Key)), sent.Notification, sent.Destination()); err != nil {
		t.Fatal(err)
	}
	f.SetEpoch(time.Now().Unix())
	store := &slowStore{}
	reg := prometheus.NewRegistry()
	// Generous timeouts: a look or post timed out on a loaded machine is
	// sent (again), which is not what this test is about.
	o := fastOutbox(store, map[string]notify.Service{"slack": f.Service(t, nil, func(c *config.SlackService) { c.Timeout.Duration = time.Minute })}, outbox.NewMetrics(reg))
	o.AttemptTimeout = time.Minute
	runOutbox(t, o)
	warmUp := delivery("warm-up")
	warmUp.MaybeSent = false
	store.warmUp(t, o, warmUp)
	posts := f.CountCalls("chat.postMessage")
	for _, d := range []outbox.Delivery{sent, delivery("unsent")} {
		rec, created, err := o.Enqueue(t.Context(), d)
		if err != nil || !created {
			t.Fatalf("Enqueue %s = %v, %v", d.Key, created, err)
		}
		waitState(t, o, rec.ID, outbox.StateDelivered)
	}
	if got := f.CountCalls("chat.postMessage") - posts; got != 1 {
		t.Errorf("%d messages posted, want 1 (the one the earlier process had not)", got)
	}
	if n := metric(t, reg, "crowsnest_notify_deliveries_total", map[string]string{"service": "slack", "trigger": "", "result": outbox.ResultConfirmed}); n != 1 {
		t.Errorf("%v deliveries confirmed at the destination, want 1", n)
	}
	if h := f.CountCalls("conversations.history"); h == 0 {
		t.Error("the channel's history was never searched")
	}
}

// latencySamples returns the count and sum of the webhook's
// crowsnest_notify_latency_seconds.
func latencySamples(t *testing.T, reg *prometheus.Registry) (uint64, float64) {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == "crowsnest_notify_latency_seconds" {
			for _, m := range mf.GetMetric() {
				if labelsMatch(m.GetLabel(), map[string]string{"service": "webhook.hook"}) {
					return m.GetHistogram().GetSampleCount(), m.GetHistogram().GetSampleSum()
				}
			}
		}
	}
	return 0, 0
}

// A post that got no answer may have reached Slack: before sending it
// again, the outbox looks for it in the channel's history, finds it, and
// records it delivered without a second post.
func TestOutboxAsksBeforeRetryingAPostThatGotNoAnswer(t *testing.T) {
	f := testnotify.NewFakeSlack(t)
	f.SetEpoch(time.Now().Unix())
	f.LeaveUnanswered(1)
	reg := prometheus.NewRegistry()
	o := fastOutbox(&outbox.MemoryStore{}, map[string]notify.Service{"slack": f.Service(t, nil, func(c *config.SlackService) { c.Timeout.Duration = time.Minute })}, outbox.NewMetrics(reg))
	// Long enough for the history search on a loaded machine; the
	// unanswered post waits this long once.
	o.AttemptTimeout = 3 * time.Second
	runOutbox(t, o)
	rec, created, err := o.Enqueue(t.Context(), outbox.Delivery{Key: "k", App: "argocd/web", Service: "slack", Recipient: "C0DEPLOYS",
		Notification: notify.Notification{Message: "web 1.1.0 deployed"}})
	if err != nil || !created {
		t.Fatalf("Enqueue = %v, %v", created, err)
	}
	got := waitState(t, o, rec.ID, outbox.StateDelivered)
	if n := f.CountCalls("chat.postMessage"); n != 1 {
		t.Errorf("%d messages posted, want 1", n)
	}
	if h := f.CountCalls("conversations.history"); h == 0 {
		t.Error("the channel's history was never searched before the retry")
	}
	if n := metric(t, reg, "crowsnest_notify_deliveries_total", map[string]string{"service": "slack", "trigger": "", "result": outbox.ResultConfirmed}); n != 1 {
		t.Errorf("%v deliveries confirmed at the destination, want 1", n)
	}
	if !strings.Contains(got.Receipt.Detail, "after an attempt that got no answer") {
		t.Errorf("receipt detail %q does not say how the message was found", got.Receipt.Detail)
	}
}
