package backoff

import (
	"context"
	"math/rand/v2"
	"time"
)

// Delay is how long to wait before the attempt after the given one
// (counted from 1): base doubled per earlier attempt, capped at maxDelay,
// then jittered over its upper half (a value in [d/2, d]) so clients that
// failed together do not retry together. A non-positive result is 0.
func Delay(base, maxDelay time.Duration, attempt int) time.Duration {
	d := base
	for i := 1; i < attempt && d < maxDelay; i++ {
		if d > maxDelay/2 {
			d = maxDelay
			break
		}
		d *= 2
	}
	d = min(d, maxDelay)
	if d <= 0 {
		return 0
	}
	half := d / 2
	return half + rand.N(half+1) // jitter, not security
}

// Sleep waits d, or less when ctx ends first; then it returns ctx.Err().
// A non-positive d returns at once with ctx.Err().
func Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
