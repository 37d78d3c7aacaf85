package testwait_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crowsnest-dev/crowsnest/internal/testwait"
)

// fatalRecorder stands in for a test whose Fatalf is recorded instead of
// ending it, so the failure of a wait can be checked.
type fatalRecorder struct {
	testing.TB
	fatal string
}

func (f *fatalRecorder) Helper() {}

func (f *fatalRecorder) Fatal(args ...any) {
	f.fatal = fmt.Sprint(args...)
}

func TestForReturnsOnceTheConditionHolds(t *testing.T) {
	var calls atomic.Int32
	testwait.For(t, "the third poll", func() bool { return calls.Add(1) >= 3 })
	if got := calls.Load(); got != 3 {
		t.Errorf("cond called %d times, want 3", got)
	}
}

func TestWaitFailsSayingWhatItAwaited(t *testing.T) {
	tests := []struct {
		name string
		wait testwait.Wait
		want string
	}{
		{name: "plain", wait: testwait.Wait{Timeout: 30 * time.Millisecond}, want: "timed out after 30ms waiting for the answer"},
		{name: "with detail", wait: testwait.Wait{Timeout: 30 * time.Millisecond, Detail: func() string { return "last seen 41" }}, want: "timed out after 30ms waiting for the answer: last seen 41"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := &fatalRecorder{TB: t}
			start := time.Now()
			tt.wait.For(rec, "the answer", func() bool { return false })
			if rec.fatal != tt.want {
				t.Errorf("failure = %q, want %q", rec.fatal, tt.want)
			}
			if took := time.Since(start); took < tt.wait.Timeout {
				t.Errorf("gave up after %s, before the %s deadline", took, tt.wait.Timeout)
			}
		})
	}
}

func TestWithinUsesItsOwnDeadline(t *testing.T) {
	rec := &fatalRecorder{TB: t}
	testwait.Within(rec, "nothing", 20*time.Millisecond, func() bool { return false })
	if !strings.HasPrefix(rec.fatal, "timed out after 20ms waiting for nothing") {
		t.Errorf("failure = %q", rec.fatal)
	}
}

// The condition is checked once more at the deadline: one that holds by
// then is not reported as missed.
func TestUntilChecksAtTheDeadline(t *testing.T) {
	const timeout = 50 * time.Millisecond
	deadline := time.Now().Add(timeout)
	if !testwait.Until(t.Context(), timeout, func() bool { return !time.Now().Before(deadline) }) {
		t.Error("Until = false for a condition that holds at the deadline")
	}
}

// Polls back off: a long wait on a condition that never holds polls it
// far less often than once a millisecond.
func TestUntilBacksOff(t *testing.T) {
	var calls atomic.Int32
	const timeout = 500 * time.Millisecond
	if testwait.Until(t.Context(), timeout, func() bool { calls.Add(1); return false }) {
		t.Fatal("Until = true for a condition that never holds")
	}
	// With pauses growing to MaxInterval (jittered over its upper half),
	// 500ms hold at most about 7 + 500/25 polls; every millisecond would
	// be 500.
	if got := calls.Load(); got > 40 {
		t.Errorf("cond called %d times in %s, want at most 40", got, timeout)
	}
}

func TestUntilStopsWhenTheContextEnds(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	var calls atomic.Int32
	got := testwait.Until(ctx, time.Hour, func() bool {
		if calls.Add(1) == 3 {
			cancel()
		}
		return false
	})
	if got {
		t.Error("Until = true for a condition that never holds")
	}
}
