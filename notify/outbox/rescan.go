package outbox

import (
	"context"
	"time"

	"github.com/crowsnest-dev/crowsnest/internal/backoff"
)

func (o *Outbox) wakeCompaction() {
	select {
	case o.settledSome <- struct{}{}:
	default:
	}
}

// compactAfterSettling compacts the store a moment after deliveries
// settle, until ctx ends: the records each delivery waits to write stay
// few however many were delivered.
func (o *Outbox) compactAfterSettling(ctx context.Context, c Compactor) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-o.settledSome:
		}
		if backoff.Sleep(ctx, DefaultCompactDelay) != nil {
			return
		}
		if err := c.Compact(ctx); err != nil && ctx.Err() == nil {
			o.Logger.Warn("compacting the outbox failed; trying again after the next delivery", "err", err)
		}
	}
}

// rescanEvery rescans the store every RescanInterval until ctx ends.
func (o *Outbox) rescanEvery(ctx context.Context) {
	if o.RescanInterval < 0 {
		<-ctx.Done()
		return
	}
	tick := time.NewTicker(o.RescanInterval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			o.rescan(ctx)
		}
	}
}

// rescan queues the store's pending records that no worker holds. A
// record settled while the list was read may be listed as pending from
// before its final save: it is skipped, as are queued ones, so nothing is
// sent twice.
func (o *Outbox) rescan(ctx context.Context) {
	defer o.rescans.Add(1)
	o.mu.Lock()
	o.settled = map[string]bool{}
	o.mu.Unlock()
	pending, err := o.Store.List(ctx, ListOptions{State: StatePending})
	o.mu.Lock()
	defer o.mu.Unlock()
	settled := o.settled
	o.settled = nil
	if err != nil {
		if ctx.Err() == nil {
			o.Logger.Warn("reading pending deliveries failed; trying again at the next rescan", "err", err)
		}
		return
	}
	picked := 0
	for i := range pending {
		if id := pending[i].ID; !settled[id] && !o.queued[id] {
			o.dispatchLocked(pending[i])
			picked++
		}
	}
	if picked > 0 {
		o.Logger.Info("pending deliveries picked up from the store", "count", picked)
	}
	o.Logger.Debug("outbox rescanned the store", "pending", len(pending), "picked", picked, "held", len(o.queued))
}
