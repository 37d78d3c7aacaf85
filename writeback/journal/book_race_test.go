package journal_test

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/crowsnest-dev/crowsnest/writeback/journal"
)

// slowStore is a Store that yields inside Save, so that writes racing
// each other interleave, and that notes two Saves of one key at once.
type slowStore struct {
	mu       sync.Mutex
	saved    map[string]journal.Intent
	inFlight map[string]bool
	overlaps int
}

func (s *slowStore) LoadAll(context.Context) (map[string]journal.Intent, error) {
	return map[string]journal.Intent{}, nil
}

func (s *slowStore) Save(_ context.Context, key string, in *journal.Intent) error {
	s.mu.Lock()
	if s.inFlight[key] {
		s.overlaps++
	}
	s.inFlight[key] = true
	s.mu.Unlock()
	for range 3 {
		runtime.Gosched()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.inFlight, key)
	if in == nil {
		delete(s.saved, key)
	} else {
		s.saved[key] = *in
	}
	return nil
}

// Settling an older intent while a newer one is recorded never leaves
// the older one in the Store: a restart would not recover the newer
// write.
func TestSettleRacingRecordKeepsTheNewerIntent(t *testing.T) {
	ctx := t.Context()
	store := &slowStore{saved: map[string]journal.Intent{}, inFlight: map[string]bool{}}
	b := &journal.Book{Store: store}
	intent := func(i int) journal.Intent {
		return journal.Intent{Method: "git", At: time.Unix(int64(i), 0),
			Changes: []journal.Change{{Image: "team/web", To: fmt.Sprintf("1.%d.0", i)}}}
	}
	if err := b.Record(ctx, "shop/web", intent(0)); err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 300; i++ {
		older, newer := intent(i-1), intent(i)
		var wg sync.WaitGroup
		wg.Go(func() {
			if err := b.Settle(ctx, "shop/web", older.Changes); err != nil {
				t.Error(err)
			}
		})
		wg.Go(func() {
			if err := b.Record(ctx, "shop/web", newer); err != nil {
				t.Error(err)
			}
		})
		wg.Wait()
		store.mu.Lock()
		got := store.saved["shop/web"]
		store.mu.Unlock()
		if !slices.Equal(got.Changes, newer.Changes) || got.Done {
			t.Fatalf("round %d: the Store holds %+v, want the newer intent %+v, not done", i, got, newer)
		}
	}
	if store.overlaps > 0 {
		t.Fatalf("%d Saves of one key overlapped", store.overlaps)
	}
}
