package outbox_test

import (
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crowsnest-dev/crowsnest/notify"
	"github.com/crowsnest-dev/crowsnest/notify/outbox"
)

// A delivery that was sent but whose final state the store refused a few
// times (a burst of conflicts on its ConfigMap, an apiserver restart) is
// saved again until the store takes it, and is never picked up by a
// rescan meanwhile: sent once, recorded delivered.
func TestOutboxFailedSaveIsRetriedNotResent(t *testing.T) {
	hook := newFlakyWebhook(t, 0)
	store := &hookedStore{MemoryStore: &outbox.MemoryStore{}}
	var refused atomic.Int32
	store.aroundUpdate = func(rec outbox.Record, write func() error) error {
		if rec.Terminal() && refused.Add(1) <= 3 {
			return errors.New("the object has been modified; please apply your changes to the latest version and try again")
		}
		return write()
	}
	o := fastOutbox(store, map[string]notify.Service{"webhook.hook": webhookService(t, "hook", hook.URL)}, nil)
	o.RescanInterval = 5 * time.Millisecond
	runOutbox(t, o)
	rec, _, err := o.Enqueue(t.Context(), hookDelivery("conflicts", "a/b", "conflicts"))
	if err != nil {
		t.Fatal(err)
	}
	waitState(t, o, rec.ID, outbox.StateDelivered)
	waitRescans(t, store, 5) // five rescans after it was recorded delivered
	if n := hook.delivered.Load(); n != 1 {
		t.Errorf("delivered %d times, want 1", n)
	}
	if n := refused.Load(); n < 4 {
		t.Errorf("the store was asked %d times, want the 3 refusals and the save", n)
	}
}
