package pipeline_test

import (
	"context"
	"errors"
	"fmt"
	"runtime/pprof"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/crowsnest-dev/crowsnest/config"
	"github.com/crowsnest-dev/crowsnest/internal/testnotify"
	"github.com/crowsnest-dev/crowsnest/internal/testwait"
	"github.com/crowsnest-dev/crowsnest/notify/outbox"
	"github.com/crowsnest-dev/crowsnest/notify/pipeline"
	"github.com/crowsnest-dev/crowsnest/triggers"
	"github.com/crowsnest-dev/crowsnest/watcher"
)

type notifyHarness struct {
	sink     *testnotify.Sink
	store    *outbox.MemoryStore
	state    *pipeline.MemoryState
	synced   atomic.Bool
	notifier *pipeline.Notifier
	outbox   *outbox.Outbox
	metrics  *pipeline.Metrics
	stop     func()
}

// start runs a fresh Notifier and Outbox over the harness's stores.
func (h *notifyHarness) start(t *testing.T) {
	t.Helper()
	out := &outbox.Outbox{Store: h.store, RetryBaseDelay: 10 * time.Millisecond}
	h.metrics = pipeline.NewMetrics(prometheus.NewRegistry())
	n := &pipeline.Notifier{
		Outbox:  out,
		State:   h.state,
		Apps:    testnotify.SyncedFunc(h.synced.Load),
		Metrics: h.metrics,
		Setup:   testnotify.HookSetup,
	}
	if err := n.Apply(testnotify.Config(h.sink.URL)); err != nil {
		t.Fatal(err)
	}
	h.stop = testnotify.RunTasks(t, out.Start, n.Start)
	h.notifier, h.outbox = n, out
	testwait.For(t, "notifier started", n.Started)
}

func newNotifyHarness(t *testing.T) *notifyHarness {
	t.Helper()
	h := &notifyHarness{sink: testnotify.NewSink(t), store: &outbox.MemoryStore{}, state: &pipeline.MemoryState{}}
	h.start(t)
	return h
}

func TestNotifierSendsOncePerTransitionAfterBaseline(t *testing.T) {
	h := newNotifyHarness(t)
	n := h.notifier

	// Seen in the initial list, already deployed and healthy: a baseline.
	v0 := testApp(t, "web", "u1", "Succeeded", "Healthy", "r0")
	n.OnTransition(nil, v0)
	h.synced.Store(true)

	steps := []*watcher.App{
		testApp(t, "web", "u1", "Running", "Healthy", "r1"),
		testApp(t, "web", "u1", "Succeeded", "Progressing", "r1"),
		testApp(t, "web", "u1", "Succeeded", "Healthy", "r1"),
		testApp(t, "web", "u1", "Succeeded", "Degraded", "r1"),
		testApp(t, "web", "u1", "Succeeded", "Healthy", "r1"),
		testApp(t, "web", "u1", "Succeeded", "Degraded", "r1"),
	}
	prev := v0
	for _, s := range steps {
		n.OnTransition(prev, s)
		prev = s
	}
	want := []string{
		"web:app-sync-running", "web:app-sync-succeeded", "web:app-deployed",
		"web:app-health-degraded", "web:app-health-degraded",
	}
	got := h.sink.WaitLen(t, len(want))
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("messages (-want +got):\n%s", diff)
	}
	// A new Application gets on-created (and nothing else here).
	n.OnTransition(nil, testApp(t, "api", "u2", "", "", ""))
	want = append(want, "api:app-created")
	if diff := cmp.Diff(want, h.sink.WaitLast(t, "api:app-created")); diff != "" {
		t.Errorf("messages (-want +got):\n%s", diff)
	}

	if got := testutil.ToFloat64(h.metrics.Evaluations("on-sync-running", pipeline.EvalTriggered)); got != 1 {
		t.Errorf("on-sync-running evaluated true %v times, want 1", got)
	}
	if got := testutil.ToFloat64(h.metrics.Evaluations("on-health-degraded", pipeline.EvalTriggered)); got != 2 {
		t.Errorf("on-health-degraded evaluated true %v times, want 2", got)
	}
	if got := testutil.ToFloat64(h.metrics.Pending()); got != 0 {
		t.Errorf("pending transitions = %v after all were processed, want 0", got)
	}

	// Restart: a new Notifier over the same stores replays the initial
	// list and sends nothing; a later transition still sends once. The
	// process stops once its deliveries are recorded: one stopped between
	// a send and its record sends again (MaybeSent), by design.
	testwait.For(t, "the deliveries recorded", func() bool { return h.outbox.Depth() == 0 })
	h.stop()
	h.synced.Store(false)
	h.start(t)
	h.notifier.OnTransition(nil, prev)
	h.synced.Store(true)
	next := testApp(t, "web", "u1", "Running", "Degraded", "r2")
	h.notifier.OnTransition(prev, next)
	got = h.sink.WaitLast(t, "web:app-sync-running")
	if len(got) != len(want)+1 {
		t.Errorf("after restart: %d messages, want %d: %v", len(got), len(want)+1, got)
	}
}

func TestNotifierEventsAndDeletes(t *testing.T) {
	h := newNotifyHarness(t)
	n := h.notifier
	app := testApp(t, "web", "u1", "Succeeded", "Healthy", "r1")
	n.OnTransition(nil, app)
	h.synced.Store(true)
	ev := triggers.Event{Type: triggers.EventImageUpdated, ID: "ev-1", Image: "ghcr.io/x/web", From: "1.0", To: "1.1"}
	n.OnEvent(app, ev)
	n.OnEvent(app, ev) // the same event again: sent once
	n.OnTransition(app, nil)
	got := h.sink.WaitLast(t, "web:app-deleted")
	if diff := cmp.Diff([]string{"web:image-updated", "web:app-deleted"}, got); diff != "" {
		t.Errorf("messages (-want +got):\n%s", diff)
	}
	// The state is pruned once the deletion's delivery is recorded,
	// which follows its send: wait for it, not for the message alone.
	testwait.For(t, "the deleted Application's state pruned", func() bool {
		st, err := h.state.LoadAll(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		_, kept := st["u1"]
		return !kept
	})
}

func TestNotifierApplyRejectsBrokenConfig(t *testing.T) {
	h := newNotifyHarness(t)
	h.synced.Store(true)
	bad := testnotify.Config(h.sink.URL)
	bad.Notifications.Triggers = map[string][]config.Condition{"on-x": {{When: "app.status ==", Send: []string{"app-deployed"}}}}
	if err := h.notifier.Apply(bad); err == nil {
		t.Fatal("Apply accepted a broken trigger")
	}
	// The previous config is still in force.
	h.notifier.OnTransition(nil, testApp(t, "api", "u2", "", "", ""))
	h.sink.WaitLast(t, "api:app-created")
}

func TestNotifierBeforeStartKeepsLatestStateAndPrunes(t *testing.T) {
	sink := testnotify.NewSink(t)
	state := &pipeline.MemoryState{}
	if err := state.Save(t.Context(), "gone", pipeline.State{Seq: 3}); err != nil {
		t.Fatal(err)
	}
	out := &outbox.Outbox{Store: &outbox.MemoryStore{}, RetryBaseDelay: 10 * time.Millisecond}
	var synced atomic.Bool
	n := &pipeline.Notifier{
		Outbox: out, State: state, Apps: testnotify.SyncedFunc(synced.Load), PruneAfter: 10 * time.Millisecond,
		Setup: testnotify.HookSetup,
	}
	if err := n.Apply(testnotify.Config(sink.URL)); err != nil {
		t.Fatal(err)
	}
	// A standby (not started) sees a whole deployment: it keeps only the
	// latest state, a baseline on first sight.
	v := []*watcher.App{
		testApp(t, "web", "u1", "Running", "Healthy", "r1"),
		testApp(t, "web", "u1", "Succeeded", "Progressing", "r1"),
		testApp(t, "web", "u1", "Succeeded", "Healthy", "r1"),
	}
	n.OnTransition(nil, v[0])
	synced.Store(true)
	n.OnTransition(v[0], v[1])
	n.OnTransition(v[1], v[2])
	testnotify.RunTasks(t, out.Start, n.Start)
	testwait.For(t, "notifier started", n.Started)
	n.OnTransition(v[2], testApp(t, "web", "u1", "Succeeded", "Degraded", "r1"))
	if diff := cmp.Diff([]string{"web:app-health-degraded"}, sink.WaitLast(t, "web:app-health-degraded")); diff != "" {
		t.Errorf("messages (-want +got):\n%s", diff)
	}
	testwait.For(t, "state of the unseen application pruned", func() bool {
		st, err := state.LoadAll(t.Context())
		_, stale := st["gone"]
		return err == nil && !stale && st["u1"].Seen
	})
}

// An Application first seen through an update (notifications just turned
// on, or its state lost) is a baseline: only what changes after is sent.
func TestNotifierFirstSightOnUpdateIsBaseline(t *testing.T) {
	h := newNotifyHarness(t)
	h.synced.Store(true)
	v1 := testApp(t, "db", "u3", "Succeeded", "Degraded", "r1")
	h.notifier.OnTransition(testApp(t, "db", "u3", "Succeeded", "Healthy", "r1"), v1)
	h.notifier.OnTransition(v1, testApp(t, "db", "u3", "Running", "Degraded", "r2"))
	if diff := cmp.Diff([]string{"db:app-sync-running"}, h.sink.WaitLast(t, "db:app-sync-running")); diff != "" {
		t.Errorf("messages (-want +got):\n%s", diff)
	}
}

// An Application of the informer's initial list is a baseline even when
// the list reaches the Notifier after the sources report synced.
func TestNotifierInitialListAfterSyncIsBaseline(t *testing.T) {
	h := newNotifyHarness(t)
	h.synced.Store(true)
	v0 := testApp(t, "late", "u9", "Succeeded", "Healthy", "r0")
	h.notifier.OnAppEvent(watcher.AppEvent{Type: watcher.Added, New: v0, Initial: true})
	h.notifier.OnAppEvent(watcher.AppEvent{Type: watcher.Updated, Old: v0, New: testApp(t, "late", "u9", "Running", "Healthy", "r1")})
	if diff := cmp.Diff([]string{"late:app-sync-running"}, h.sink.WaitLast(t, "late:app-sync-running")); diff != "" {
		t.Errorf("messages (-want +got):\n%s", diff)
	}
}

// failingSaveState is a MemoryState whose next fail saves fail.
type failingSaveState struct {
	pipeline.MemoryState
	fail atomic.Int32
}

func (s *failingSaveState) Save(ctx context.Context, app string, st pipeline.State) error {
	if s.fail.Add(-1) >= 0 {
		return errors.New("state store down")
	}
	return s.MemoryState.Save(ctx, app, st)
}

// saved returns the state of u1 and whether there is one.
func (s *failingSaveState) saved(t *testing.T) (pipeline.State, bool) {
	t.Helper()
	all, err := s.LoadAll(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	st, ok := all["u1"]
	return st, ok
}

func (s *failingSaveState) seq(t *testing.T) uint64 {
	t.Helper()
	st, _ := s.saved(t)
	return st.Seq
}

// A process sends a level firing (no oncePer) and dies before its state
// is saved; the condition is false when the next process looks. The next
// real firing must not reuse the key the earlier process delivered under,
// or the outbox takes it for that delivery and drops it. With a store that
// keeps one finished record per Application the earlier record is gone by
// the time the later firing's save is retried (the retry must keep its
// key all the same); the earlier process's clock may run ahead (another
// replica's).
func TestNotifierNewFiringAfterAnUnsavedOneIsSent(t *testing.T) {
	for _, tc := range []struct {
		name string
		keep int
		skew time.Duration
	}{
		{name: "records trimmed", keep: 1},
		{name: "earlier clock ahead", skew: 30 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) { testNewFiringAfterAnUnsavedOne(t, tc.keep, tc.skew) })
	}
}

func testNewFiringAfterAnUnsavedOne(t *testing.T, keep int, skew time.Duration) {
	t.Helper()
	sink := testnotify.NewSink(t)
	store := &outbox.MemoryStore{Keep: keep}
	state := &failingSaveState{}
	var synced atomic.Bool
	var out *outbox.Outbox
	start := func(skew time.Duration) (*pipeline.Notifier, func()) {
		now := func() time.Time { return time.Now().Add(skew) }
		out = &outbox.Outbox{Store: store, RetryBaseDelay: 10 * time.Millisecond, Now: now}
		n := &pipeline.Notifier{Outbox: out, State: state, Apps: testnotify.SyncedFunc(synced.Load), Now: now,
			Metrics: pipeline.NewMetrics(prometheus.NewRegistry()), Setup: testnotify.HookSetup}
		if err := n.Apply(testnotify.Config(sink.URL)); err != nil {
			t.Fatal(err)
		}
		stop := testnotify.RunTasks(t, out.Start, n.Start)
		testwait.For(t, "notifier started", n.Started)
		return n, stop
	}
	healthy := testApp(t, "web", "u1", "Succeeded", "Healthy", "r1")
	degraded := testApp(t, "web", "u1", "Succeeded", "Degraded", "r1")

	seen := func() bool { _, ok := state.saved(t); return ok }
	n, stop := start(skew)
	n.OnTransition(nil, healthy)
	synced.Store(true)
	testwait.For(t, "the baseline saved", seen)
	state.fail.Store(1 << 20)
	n.OnTransition(healthy, degraded)
	sink.WaitLast(t, "web:app-health-degraded")
	// Dies with the firing delivered (and recorded so: one stopped
	// between the send and its record sends again, by design) and its
	// state unsaved.
	testwait.For(t, "the delivery recorded", func() bool { return out.Depth() == 0 })
	stop()
	if got := state.seq(t); got != 0 {
		t.Fatalf("level counter %d saved while the store failed", got)
	}

	// The next process: healthy at first look, then degraded again. Its
	// first save of that firing fails too: the retry of the same
	// observation keeps the new key and sends nothing more.
	state.fail.Store(0)
	synced.Store(false)
	n, _ = start(0)
	n.OnTransition(nil, healthy)
	synced.Store(true)
	testwait.For(t, "the baseline saved", seen)
	state.fail.Store(1)
	n.OnTransition(healthy, degraded)
	sink.WaitLen(t, 2)
	testwait.For(t, "the second firing's state saved", func() bool { return state.seq(t) != 0 })
	want := []string{"web:app-health-degraded", "web:app-health-degraded"}
	if diff := cmp.Diff(want, sink.Messages()); diff != "" {
		t.Errorf("messages (-want +got):\n%s", diff)
	}
	// Healthy and degraded once more: the counter goes on from the saved
	// one, and this firing is sent once too.
	seq := state.seq(t)
	n.OnTransition(degraded, healthy)
	n.OnTransition(healthy, degraded)
	sink.WaitLen(t, 3)
	testwait.For(t, "the third firing's state saved", func() bool { return state.seq(t) > seq })
	if got := sink.Messages(); len(got) != 3 {
		t.Errorf("messages: %v, want 3", got)
	}
}

// goroutinesIn counts the goroutines whose stack holds fn.
func goroutinesIn(t *testing.T, fn string) int {
	t.Helper()
	var b strings.Builder
	if err := pprof.Lookup("goroutine").WriteTo(&b, 2); err != nil {
		t.Fatal(err)
	}
	n := 0
	for g := range strings.SplitSeq(b.String(), "\n\n") {
		if strings.Contains(g, fn) {
			n++
		}
	}
	return n
}

// Workers are goroutines only while they work: an idle notifier (most
// installations between syncs, all of those without notifications)
// keeps none of its 512, only Start, its dispatcher and its pruner.
func TestNotifierKeepsNoIdleWorkers(t *testing.T) {
	h := newNotifyHarness(t)
	const notifier = "pipeline.(*Notifier)."
	if got := goroutinesIn(t, notifier); got > 3 {
		t.Errorf("%d notifier goroutines while nothing was queued, want at most 3", got)
	}
	h.synced.Store(true)
	for i := range 20 {
		h.notifier.OnTransition(nil, testApp(t, fmt.Sprintf("app-%02d", i), fmt.Sprintf("u%d", i), "", "", ""))
	}
	h.sink.WaitLen(t, 20)
	testwait.For(t, "the workers to end", func() bool { return goroutinesIn(t, notifier) <= 3 })
}
