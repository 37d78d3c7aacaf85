package controller

import (
	"context"
	"time"
)

// WhenLeading runs start once e leads (at once without leader election),
// so that only the leader evaluates triggers and delivers: a standby's
// Notifier keeps the latest state per Application and works from there
// when it takes over. Losing the lease ends the process.
func WhenLeading(e *Engine, start func(context.Context) error) func(context.Context) error {
	return func(ctx context.Context) error {
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for !e.Leading() {
			select {
			case <-ctx.Done():
				return nil
			case <-tick.C:
			}
		}
		return start(ctx)
	}
}
