package outbox_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/crowsnest-dev/crowsnest/internal/testwait"
	"github.com/crowsnest-dev/crowsnest/notify"
	"github.com/crowsnest-dev/crowsnest/notify/outbox"
)

// outageStore is a MemoryStore behind an apiserver that is down (every
// write fails) until recover is called; after that, the first Create of
// a pending record goes through before any write of a delivered one, and
// returns only once settled reports true: the order in which a retried
// Enqueue and the worker still saving the early send's state can meet.
type outageStore struct {
	outbox.MemoryStore
	down    atomic.Bool
	created atomic.Bool // a pending record was created after the outage

	mu      sync.Mutex
	settled func() bool
}

var errOutage = errors.New("dial tcp 127.0.0.1:6443: connect: connection refused")

func (s *outageStore) recover(settled func() bool) {
	s.mu.Lock()
	s.settled = settled
	s.mu.Unlock()
	s.down.Store(false)
}

func (s *outageStore) Create(ctx context.Context, rec outbox.Record) (bool, error) {
	if s.down.Load() || (rec.State != outbox.StatePending && !s.created.Load()) {
		return false, errOutage
	}
	made, err := s.MemoryStore.Create(ctx, rec)
	if err != nil || rec.State != outbox.StatePending || s.created.Swap(true) {
		return made, err
	}
	s.mu.Lock()
	settled := s.settled
	s.mu.Unlock()
	// The worker saves "delivered" over this record now; Create runs on
	// the outbox's goroutine, so it reports rather than fails the test.
	if !testwait.Until(context.Background(), time.Minute, settled) {
		return made, errors.New("the worker never settled the delivery")
	}
	return made, err
}

func (s *outageStore) Update(ctx context.Context, rec outbox.Record) error {
	if s.down.Load() || !s.created.Load() {
		return errOutage
	}
	return s.MemoryStore.Update(ctx, rec)
}

// An early send whose record could not be written (the apiserver was
// down) is held by its worker until its state is saved. When the
// pipeline enqueues the same key again and its Create lands just before
// that save settles the delivery, the message is not sent a second time
// (fault suite: TestKubeAPIServerRestart saw one duplicate of 40).
func TestOutboxRetriedEnqueueRacingTheSaveSendsOnce(t *testing.T) {
	hook := newFlakyWebhook(t, 0)
	store := &outageStore{}
	store.created.Store(true) // no outage yet
	o := fastOutbox(store, map[string]notify.Service{"webhook.hook": webhookService(t, "hook", hook.URL)}, outbox.NewMetrics(prometheus.NewRegistry()))
	runOutbox(t, o)
	warm, _, err := o.Enqueue(t.Context(), hookDelivery("warm-up", "argocd/warm-up", `{}`))
	if err != nil {
		t.Fatal(err)
	}
	waitState(t, o, warm.ID, outbox.StateDelivered)
	waitSettled(t, o)

	store.down.Store(true)
	store.created.Store(false)
	d := hookDelivery("k1", "argocd/web", `{"n":1}`)
	if _, _, err := o.Enqueue(t.Context(), d); err == nil {
		t.Fatal("Enqueue succeeded while the store was down")
	}
	testwait.For(t, "the early send", func() bool { return hook.delivered.Load() == 2 })

	store.recover(func() bool { return o.Depth() == 0 })
	rec, created, err := o.Enqueue(t.Context(), d)
	if err != nil || !created {
		t.Fatalf("retried Enqueue = %v, %v; want created", created, err)
	}
	if n := o.Depth(); n != 0 {
		t.Fatalf("the retried Enqueue handed a delivered message to a worker again (%d held)", n)
	}
	if got, err := o.Store.Get(t.Context(), rec.ID); err != nil || got.State != outbox.StateDelivered {
		t.Fatalf("record = %+v, %v; want delivered", got, err)
	}
	if n := hook.delivered.Load(); n != 2 {
		t.Errorf("%d messages, want 2 (the warm-up's and this one, once)", n)
	}
}
