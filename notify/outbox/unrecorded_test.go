package outbox_test

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/crowsnest-dev/crowsnest/internal/testenv"
	"github.com/crowsnest-dev/crowsnest/internal/testwait"
	"github.com/crowsnest-dev/crowsnest/notify"
	"github.com/crowsnest-dev/crowsnest/notify/outbox"
)

// heldStore is a MemoryStore whose saves of delivered records wait until
// released: the moment a crash would leave those messages sent and not
// recorded.
type heldStore struct {
	outbox.MemoryStore
	release chan struct{}
	waiting atomic.Int32
}

func (s *heldStore) Update(ctx context.Context, rec outbox.Record) error {
	if rec.State == outbox.StateDelivered {
		s.waiting.Add(1)
		select {
		case <-s.release:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return s.MemoryStore.Update(ctx, rec)
}

// No more than MaxUnrecorded messages are sent while their deliveries are
// not recorded: that is the most a crash can make the next process send
// again (docs/guarantees.md). The rest wait, and go out as records are written.
func TestOutboxBoundsMessagesSentAndNotRecorded(t *testing.T) {
	hook := newFlakyWebhook(t, 0)
	store := &heldStore{release: make(chan struct{})}
	o := fastOutbox(store, map[string]notify.Service{"webhook.hook": webhookService(t, "hook", hook.URL)}, nil)
	o.MaxUnrecorded = 3
	var logs testenv.LogBuffer
	o.Logger = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	runOutbox(t, o)
	var ids []string
	for i := range 8 {
		app := fmt.Sprintf("argocd/app%d", i) // one worker each: all could send at once
		rec, _, err := o.Enqueue(t.Context(), hookDelivery(app, app, `{}`))
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, rec.ID)
	}
	testwait.For(t, "three deliveries waiting to be recorded", func() bool { return store.waiting.Load() == 3 })
	// The five other workers each say they wait for a slot, then wait.
	testwait.For(t, "five deliveries waiting for a slot", func() bool {
		return strings.Count(logs.String(), "waiting for sent messages to be recorded before sending another") == 5
	})
	if n := hook.delivered.Load(); n != 3 {
		t.Fatalf("%d messages sent while 3 deliveries were not recorded, want 3", n)
	}
	close(store.release)
	for _, id := range ids {
		waitState(t, o, id, outbox.StateDelivered)
	}
	if n := hook.delivered.Load(); n != 8 {
		t.Errorf("%d messages sent in all, want 8", n)
	}
}
