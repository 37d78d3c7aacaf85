package pipeline_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/crowsnest-dev/crowsnest/internal/testnotify"
	"github.com/crowsnest-dev/crowsnest/internal/testwait"
	"github.com/crowsnest-dev/crowsnest/notify/outbox"
	"github.com/crowsnest-dev/crowsnest/notify/pipeline"
	"github.com/crowsnest-dev/crowsnest/triggers"
)

// maybeSentStore is a MemoryStore that notes, per trigger, whether each
// delivery created was marked as one an earlier process may have sent.
type maybeSentStore struct {
	outbox.MemoryStore
	mu   sync.Mutex
	seen []string
}

func (s *maybeSentStore) Create(ctx context.Context, rec outbox.Record) (bool, error) {
	s.mu.Lock()
	mark := "live"
	if rec.MaybeSent {
		mark = "maybe sent"
	}
	s.seen = append(s.seen, rec.Trigger+": "+mark)
	s.mu.Unlock()
	return s.MemoryStore.Create(ctx, rec)
}

func (s *maybeSentStore) marks() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.seen...)
}

// What the notifier fires on its first look at an Application after a
// start (the restart re-evaluates what the earlier process may have sent
// and not recorded) and the announcements recovered from the write
// journal go to the outbox as MaybeSent, so they are recorded before
// they are sent and, for Slack, looked for first; live transitions and
// events are not.
func TestNotifierMarksWhatAnEarlierProcessMayHaveSent(t *testing.T) {
	sink := testnotify.NewSink(t)
	store := &maybeSentStore{}
	state := &pipeline.MemoryState{}
	var synced atomic.Bool
	// start runs a notifier; before sees it first, not started (a
	// standby's, or one loading its state).
	start := func(before func(*pipeline.Notifier)) (*pipeline.Notifier, func()) {
		out := &outbox.Outbox{Store: store, RetryBaseDelay: 10 * time.Millisecond}
		n := &pipeline.Notifier{Outbox: out, State: state, Apps: testnotify.SyncedFunc(synced.Load),
			Metrics: pipeline.NewMetrics(prometheus.NewRegistry()), Setup: testnotify.HookSetup}
		if err := n.Apply(testnotify.Config(sink.URL)); err != nil {
			t.Fatal(err)
		}
		if before != nil {
			before(n)
		}
		stop := testnotify.RunTasks(t, out.Start, n.Start)
		testwait.For(t, "notifier started", n.Started)
		return n, stop
	}
	n, stop := start(nil)
	v0 := testApp(t, "web", "u1", "Succeeded", "Healthy", "r0")
	n.OnTransition(nil, v0) // the initial list: a baseline
	synced.Store(true)
	v1 := testApp(t, "web", "u1", "Running", "Healthy", "r1")
	n.OnTransition(v0, v1)
	n.OnEvent(v1, triggers.Event{Type: triggers.EventImageUpdated, ID: "ev-live", Image: "ghcr.io/x/web", From: "1.0", To: "1.1"})
	sink.WaitLen(t, 2)
	stop()

	// The next process: its first look sees the sync finished (the
	// earlier one may have announced it), then a write of the earlier
	// process is found landed and announced again.
	synced.Store(false)
	n, stop = start(nil)
	v2 := testApp(t, "web", "u1", "Succeeded", "Healthy", "r1")
	n.OnTransition(nil, v2)
	synced.Store(true)
	n.OnEvent(v2, triggers.Event{Type: triggers.EventImageUpdated, ID: "ev-recovered", Image: "ghcr.io/x/web", From: "1.1", To: "1.2", Recovered: true})
	sink.WaitLen(t, 5)
	stop()

	// A standby queues an event (window timers run on every replica)
	// before it takes over: the leader may have announced it.
	_, _ = start(func(n *pipeline.Notifier) {
		n.OnEvent(v2, triggers.Event{Type: triggers.EventImageUpdated, ID: "ev-standby", Image: "ghcr.io/x/web", From: "1.2", To: "1.3"})
	})
	sink.WaitLen(t, 6)
	want := []string{
		"on-sync-running: live", "on-image-updated: live",
		"on-deployed: maybe sent", "on-sync-succeeded: maybe sent", "on-image-updated: maybe sent",
		"on-image-updated: maybe sent",
	}
	if diff := cmp.Diff(want, store.marks()); diff != "" {
		t.Errorf("deliveries created (-want +got):\n%s", diff)
	}
}
