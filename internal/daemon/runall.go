package daemon

import (
	"context"
	"sync"
	"time"
)

// eventFlushTimeout bounds the writing of pending Events at exit: well
// within a Pod's default 30 s grace period, after the rest has stopped.
const eventFlushTimeout = 10 * time.Second

// runAll runs tasks until ctx ends or one fails; then it cancels the rest
// and returns the first error.
func runAll(ctx context.Context, tasks []func(context.Context) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		wg    sync.WaitGroup
		once  sync.Once
		first error
	)
	for _, task := range tasks {
		wg.Go(func() {
			err := task(ctx)
			if err != nil {
				once.Do(func() { first = err })
			}
			// Any task ending (the engine losing its lease, a server failing)
			// ends the process.
			cancel()
		})
	}
	wg.Wait()
	return first
}
