package kubeevents_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/crowsnest-dev/crowsnest/internal/kubecore"
	"github.com/crowsnest-dev/crowsnest/internal/kubeevents"
)

// busyFlag is WriteBacks that counts how often the Sink asked.
type busyFlag struct {
	busy  atomic.Bool
	asked atomic.Int64
}

func (b *busyFlag) Working() bool {
	b.asked.Add(1)
	return b.busy.Load()
}

// waitAsked waits until the Sink asked at least n times.
func (b *busyFlag) waitAsked(t *testing.T, n int64) {
	t.Helper()
	err := wait.PollUntilContextTimeout(t.Context(), 5*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		return b.asked.Load() >= n, nil
	})
	if err != nil {
		t.Fatalf("WriteBacks asked %d times, want %d: %v", b.asked.Load(), n, err)
	}
}

// While write-backs are busy, Events wait for them; once they are done,
// every waiting Event is written.
func TestEventsWaitForBusyWriteBacks(t *testing.T) {
	ns := env.CreateNamespace(t, "events")
	cs := client(t, 300, 1000)
	s, reg, _ := newSink(t, cs)
	b := &busyFlag{}
	b.busy.Store(true)
	s.WriteBacks, s.MaxDelay = b, time.Hour
	s.Start()
	for i := range 20 {
		s.Event(app(ns, fmt.Sprintf("app-%d", i)), corev1.EventTypeNormal, "ImagesUpdated", "a -> b")
	}
	// Every writer asked (and was told to wait) more than once: a write
	// would have followed an answer of false, and none was given.
	b.waitAsked(t, 3*kubeevents.DefaultWorkers)
	if events, _ := recorded(t, cs, ns); len(events) != 0 {
		t.Fatalf("%d Events written while the write-backs were busy", len(events))
	}
	b.busy.Store(false)
	waitRecorded(t, cs, ns, 20)
	// A writer counts its Event after the apiserver answered, so the
	// apiserver may show an Event not yet counted: Shutdown waits for
	// the writers.
	s.Shutdown(time.Minute)
	if got := outcomes(t, reg); got["written"] != 20 {
		t.Fatalf("outcomes %v, want 20 written", got)
	}
}

// An Event waits for busy write-backs at most MaxDelay.
func TestBusyWriteBacksDelayAnEventAtMostMaxDelay(t *testing.T) {
	ns := env.CreateNamespace(t, "events")
	cs := client(t, 300, 1000)
	s, _, _ := newSink(t, cs)
	b := &busyFlag{}
	b.busy.Store(true)
	s.WriteBacks, s.MaxDelay = b, 300*time.Millisecond
	s.Start()
	defer s.Shutdown(time.Minute)
	recordedAt := time.Now()
	s.Event(app(ns, "app-0"), corev1.EventTypeNormal, "ImagesUpdated", "a -> b")
	waitRecorded(t, cs, ns, 1)
	if d := time.Since(recordedAt); d < 300*time.Millisecond {
		t.Fatalf("written after %v while busy, before MaxDelay", d)
	}
}

// Shutdown writes what is pending without waiting for busy write-backs.
func TestShutdownDoesNotWaitForBusyWriteBacks(t *testing.T) {
	ns := env.CreateNamespace(t, "events")
	cs := client(t, 300, 1000)
	s, _, _ := newSink(t, cs)
	b := &busyFlag{}
	b.busy.Store(true)
	s.WriteBacks, s.MaxDelay = b, time.Hour
	s.Start()
	for i := range 10 {
		s.Event(app(ns, fmt.Sprintf("app-%d", i)), corev1.EventTypeNormal, "ImagesUpdated", "a -> b")
	}
	s.Shutdown(time.Minute)
	if _, sum := recorded(t, cs, ns); sum != 10 {
		t.Fatalf("%d Events recorded after Shutdown, want 10", sum)
	}
}

// waitRecorded waits until the namespace's Event counts sum to n.
func waitRecorded(t *testing.T, cs kubecore.Interface, ns string, n int) {
	t.Helper()
	sum := 0
	err := wait.PollUntilContextTimeout(t.Context(), 20*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		_, sum = recorded(t, cs, ns)
		return sum >= n, nil
	})
	if err != nil || sum != n {
		t.Fatalf("Events sum to %d, want %d (%v)", sum, n, err)
	}
}

// A writer asks WriteBacks without the lock; another writer may take the whole
// queue meanwhile. The first must then wait for more, not take an entry
// that is gone (it took index 0 of an empty queue and panicked, in the
// e2e suite).
func TestAWriterWhoseQueueEmptiedWhileItAskedWaits(t *testing.T) {
	ns := env.CreateNamespace(t, "events")
	cs := client(t, 300, 1000)
	s, reg, _ := newSink(t, cs)
	s.Workers, s.MaxDelay = 2, time.Hour
	slow := &slowFirstAnswer{events: cs.Events(ns)}
	s.WriteBacks = slow
	asked := &slow.asked
	s.Start()
	s.Event(app(ns, "app-0"), corev1.EventTypeNormal, "ImagesUpdated", "a -> b")
	waitAskedAtLeast(t, asked, 1) // the first writer is asking now
	s.Event(app(ns, "app-1"), corev1.EventTypeNormal, "ImagesUpdated", "a -> b")
	waitRecorded(t, cs, ns, 2)
	waitAskedAtLeast(t, asked, 3) // ... and the one that wrote both asked twice
	s.Event(app(ns, "app-2"), corev1.EventTypeNormal, "ImagesUpdated", "a -> b")
	s.Shutdown(time.Minute)
	if _, sum := recorded(t, cs, ns); sum != 3 {
		t.Fatalf("%d Events recorded, want 3", sum)
	}
	if got := outcomes(t, reg); got["written"] != 3 {
		t.Fatalf("outcomes %v, want 3 written", got)
	}
}

// slowFirstAnswer is WriteBacks that are never busy, but the first time
// it is asked it answers only once two Events are written.
type slowFirstAnswer struct {
	events kubecore.EventInterface
	asked  atomic.Int64
}

func (s *slowFirstAnswer) Working() bool {
	if s.asked.Add(1) > 1 {
		return false
	}
	_ = wait.PollUntilContextTimeout(context.Background(), 5*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		list, err := s.events.List(ctx, metav1.ListOptions{})
		return err == nil && len(list.Items) == 2, nil
	})
	return false
}

func waitAskedAtLeast(t *testing.T, asked *atomic.Int64, n int64) {
	t.Helper()
	err := wait.PollUntilContextTimeout(t.Context(), 5*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		return asked.Load() >= n, nil
	})
	if err != nil {
		t.Fatalf("WriteBacks asked %d times, want %d: %v", asked.Load(), n, err)
	}
}
