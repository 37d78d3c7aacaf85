package testwait

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/crowsnest-dev/crowsnest/internal/backoff"
)

// Timeout is how long For waits. The things tests wait for take
// milliseconds, but the tests run beside a real control plane, registries
// and Git servers on a busy machine; a wait this long fails only when the
// awaited thing is not coming.
const Timeout = 60 * time.Second

// MaxInterval is the longest pause between two polls: short enough that a
// wait ends soon after its condition holds, long enough that a long wait
// on a condition that reads an API server costs little.
const MaxInterval = 50 * time.Millisecond

// firstInterval is the first pause: most conditions hold within a few
// milliseconds, and polling them again at once costs nothing.
const firstInterval = time.Millisecond

// For polls cond until it holds and fails the test (Fatal) when it
// does not hold within Timeout; what names the awaited thing in the
// failure ("the second delivery").
func For(tb testing.TB, what string, cond func() bool) {
	tb.Helper()
	Wait{}.For(tb, what, cond)
}

// Within is For with a deadline of its own, for a wait that is long on
// purpose (a lease running out, a fault's duration).
func Within(tb testing.TB, what string, timeout time.Duration, cond func() bool) {
	tb.Helper()
	Wait{Timeout: timeout}.For(tb, what, cond)
}

// Until polls cond until it holds (true), or timeout passes or ctx ends
// (false), for callers that report rather than fail: a goroutine other
// than the test's own, or a fault suite that counts misses.
func Until(ctx context.Context, timeout time.Duration, cond func() bool) bool {
	return Wait{Timeout: timeout}.Until(ctx, cond)
}

// Wait is a wait with settings of its own; the zero value is For's.
type Wait struct {
	// Timeout is how long to wait; zero or less is Timeout.
	Timeout time.Duration
	// MaxInterval caps the pause between polls; zero or less is
	// MaxInterval. Raise it for a costly condition.
	MaxInterval time.Duration
	// Detail, when set, is called once the wait has timed out, and what it
	// returns follows the failure message: the last value seen, a log.
	Detail func() string
}

// For polls cond until it holds and fails the test (Fatal) when it
// does not hold in time, saying what it waited for and for how long.
func (w Wait) For(tb testing.TB, what string, cond func() bool) {
	tb.Helper()
	if w.Until(context.Background(), cond) {
		return
	}
	msg := fmt.Sprintf("timed out after %s waiting for %s", w.timeout(), what)
	if w.Detail != nil {
		msg += ": " + w.Detail()
	}
	tb.Fatal(msg)
}

// Until polls cond until it holds (true), or the wait's Timeout passes
// or ctx ends (false). cond is checked once more at the deadline, so a
// condition that holds by then is never reported as missed.
func (w Wait) Until(ctx context.Context, cond func() bool) bool {
	deadline := time.Now().Add(w.timeout())
	maxInterval := w.MaxInterval
	if maxInterval <= 0 {
		maxInterval = MaxInterval
	}
	for attempt := 1; ; attempt++ {
		if cond() {
			return true
		}
		left := time.Until(deadline)
		if left <= 0 || ctx.Err() != nil {
			return false
		}
		// An error means ctx ended; the next round sees it after a last
		// check of cond.
		_ = backoff.Sleep(ctx, min(backoff.Delay(firstInterval, maxInterval, attempt), left))
	}
}

func (w Wait) timeout() time.Duration {
	if w.Timeout <= 0 {
		return Timeout
	}
	return w.Timeout
}
