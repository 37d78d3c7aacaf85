package outbox_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/crowsnest-dev/crowsnest/internal/testnotify"
	"github.com/crowsnest-dev/crowsnest/internal/testwait"
	"github.com/crowsnest-dev/crowsnest/notify"
	"github.com/crowsnest-dev/crowsnest/notify/outbox"
	"github.com/crowsnest-dev/crowsnest/notify/services/slack"
)

// crashedSend does what a process killed between a send and its record
// did: the delivery is recorded pending, its message is posted (through
// the real Slack service, with its metadata), and nothing else.
func crashedSend(t *testing.T, store outbox.Store, sl *slack.Sender, d outbox.Delivery, posted bool) outbox.Record {
	t.Helper()
	d.ID = outbox.DeliveryID(d.Key)
	now := time.Now()
	rec := outbox.Record{Delivery: d, State: outbox.StatePending, CreatedAt: now, UpdatedAt: now}
	if _, err := store.Create(t.Context(), rec); err != nil {
		t.Fatal(err)
	}
	if posted {
		if _, err := sl.Send(notify.WithDeliveryID(t.Context(), d.ID), d.Notification, d.Destination()); err != nil {
			t.Fatal(err)
		}
	}
	return rec
}

// After a crash between a Slack post and its record, the next outbox
// finds the message in the channel (by the delivery's metadata, in the
// history or the thread it went to) and records it instead of posting it
// again; a delivery whose post never happened, or that was redelivered
// by hand since the post that is there, is posted.
func TestOutboxFindsSlackMessagesPostedBeforeACrash(t *testing.T) {
	f := testnotify.NewFakeSlack(t)
	f.SetEpoch(time.Now().Unix())
	store := &outbox.MemoryStore{}
	sl := f.Service(t, store)
	// A thread exists for the grouping key: its replies are searched.
	if _, err := sl.Send(t.Context(), notify.Notification{Message: "thread start", Slack: &notify.SlackTemplate{GroupingKey: "g"}},
		notify.Destination{Service: "slack", Recipient: "#threads"}); err != nil {
		t.Fatal(err)
	}
	delivery := func(key, recipient, msg string, st *notify.SlackTemplate) outbox.Delivery {
		return outbox.Delivery{Key: key, App: "argocd/" + key, Service: "slack", Recipient: recipient,
			Notification: notify.Notification{Message: msg, Slack: st}}
	}
	posted := crashedSend(t, store, sl, delivery("posted", "#deploys", "posted before the crash", nil), true)
	reply := crashedSend(t, store, sl, delivery("reply", "#threads", "reply before the crash", &notify.SlackTemplate{GroupingKey: "g"}), true)
	// The crash came after a post that starts a thread, before the thread
	// was saved (in a channel posted to before, whose ID is known).
	if _, err := sl.Send(t.Context(), notify.Notification{Message: "earlier"}, notify.Destination{Service: "slack", Recipient: "#threads2"}); err != nil {
		t.Fatal(err)
	}
	starter := crashedSend(t, store, f.Service(t, nil), delivery("starter", "#threads2", "starts a thread", &notify.SlackTemplate{GroupingKey: "h"}), true)
	unsent := crashedSend(t, store, sl, delivery("unsent", "#deploys", "never posted", nil), false)
	// Posted once, then redelivered by hand; the crash came before the
	// redelivery's post.
	again := crashedSend(t, store, sl, delivery("again", "#deploys", "asked for again", nil), true)
	if _, err := store.Modify(t.Context(), again.ID, func(r *outbox.Record) error { r.Redeliveries = 1; return nil }); err != nil {
		t.Fatal(err)
	}
	postsBefore := f.CountCalls("chat.postMessage")

	// The next process: a new Slack service (no memory of channels) over
	// the same store.
	sl2 := f.Service(t, store)
	reg := prometheus.NewRegistry()
	o := fastOutbox(store, map[string]notify.Service{"slack": sl2}, outbox.NewMetrics(reg))
	// Slack's answer to the first search is a 429: it is waited out, not
	// taken for "not there".
	f.RateLimitNext(1)
	runOutbox(t, o)
	for _, rec := range []outbox.Record{posted, reply, starter, unsent, again} {
		waitState(t, o, rec.ID, outbox.StateDelivered)
	}
	if got := f.CountCalls("chat.postMessage") - postsBefore; got != 2 {
		t.Errorf("%d messages posted after the restart, want 2 (the unsent one and the redelivery)", got)
	}
	for _, rec := range []outbox.Record{posted, reply, starter} {
		got, err := store.Get(t.Context(), rec.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.Receipt.ID == "" || got.Attempts != 0 {
			t.Errorf("%s: receipt %+v after %d attempts, want the found message's ts and no attempt", rec.Key, got.Receipt, got.Attempts)
		}
	}
	// The metric follows the record's save.
	testwait.For(t, "three deliveries counted as confirmed", func() bool {
		return metric(t, reg, "crowsnest_notify_deliveries_total", map[string]string{"service": "slack", "trigger": "", "result": outbox.ResultConfirmed}) == 3
	})
	// One search per conversation, however many of its deliveries are
	// looked for: #deploys (three), #threads2, and the thread in #threads.
	if h, r := f.CountCalls("conversations.history"), f.CountCalls("conversations.replies"); h != 2 || r != 1 {
		t.Errorf("%d history and %d replies searches, want 2 and 1: %v", h, r, f.Calls())
	}

	// The thread the found post started was saved: the next message of
	// its grouping key replies in it.
	st, err := store.Get(t.Context(), starter.ID)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sl2.Send(t.Context(), notify.Notification{Message: "next", Slack: &notify.SlackTemplate{GroupingKey: "h"}},
		notify.Destination{Service: "slack", Recipient: "#threads2"}); err != nil {
		t.Fatal(err)
	}
	if calls := f.Calls(); calls[len(calls)-1].Form.Get("thread_ts") != st.Receipt.ID {
		t.Errorf("next message of the grouping key: thread_ts %q, want the found post %q", calls[len(calls)-1].Form.Get("thread_ts"), st.Receipt.ID)
	}

	// Deliveries enqueued while running are never looked for.
	before := len(f.Calls())
	rec, _, err := o.Enqueue(context.Background(), delivery("live", "#deploys", "live", nil))
	if err != nil {
		t.Fatal(err)
	}
	waitState(t, o, rec.ID, outbox.StateDelivered)
	for _, c := range f.Calls()[before:] {
		if c.Method != "chat.postMessage" {
			t.Errorf("a live delivery made a %s call", c.Method)
		}
	}
}

// A 429 with Retry-After is waited out by the outbox without spending an
// attempt, and the message is delivered once.
func TestSlackRateLimitedThroughOutbox(t *testing.T) {
	f := testnotify.NewFakeSlack(t)
	f.RateLimitNext(1)
	reg := prometheus.NewRegistry()
	o := fastOutbox(&outbox.MemoryStore{}, map[string]notify.Service{"slack": f.Service(t, nil)}, outbox.NewMetrics(reg))
	o.MaxAttempts = 1
	runOutbox(t, o)
	start := time.Now()
	rec, _, err := o.Enqueue(t.Context(), outbox.Delivery{Key: "rl", App: "a/b", Trigger: "on-deployed", Service: "slack", Recipient: "#deploys", Notification: notify.Notification{Message: "hi"}})
	if err != nil {
		t.Fatal(err)
	}
	got := waitState(t, o, rec.ID, outbox.StateDelivered)
	if took := time.Since(start); took < time.Second {
		t.Errorf("delivered after %s, before Retry-After: 1 passed", took)
	}
	var methods []string
	for _, c := range f.Calls() {
		methods = append(methods, c.Method)
	}
	if diff := cmp.Diff([]string{"chat.postMessage (429)", "chat.postMessage"}, methods); diff != "" {
		t.Errorf("calls (-want +got):\n%s", diff)
	}
	if got.Attempts != 1 {
		t.Errorf("attempts = %d, want 1 (the 429 does not count)", got.Attempts)
	}
	testwait.For(t, "the delivered metric", func() bool {
		return metric(t, reg, "crowsnest_notify_deliveries_total", map[string]string{"service": "slack", "trigger": "on-deployed", "result": "delivered"}) == 1
	})
	if n := metric(t, reg, "crowsnest_notify_deliveries_total", map[string]string{"service": "slack", "trigger": "on-deployed", "result": "rate_limited"}); n != 1 {
		t.Errorf("rate_limited deliveries = %v, want 1", n)
	}
	if n := metric(t, reg, "crowsnest_notify_retries_total", map[string]string{"service": "slack"}); n != 1 {
		t.Errorf("retries = %v, want 1", n)
	}
}
