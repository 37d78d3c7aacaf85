package backoff_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/crowsnest-dev/crowsnest/internal/backoff"
)

func TestDelay(t *testing.T) {
	tests := []struct {
		name           string
		base, maxDelay time.Duration
		attempt        int
		want           time.Duration // the un-jittered delay: the result is in [want/2, want]
	}{
		{name: "first attempt", base: time.Second, maxDelay: time.Minute, attempt: 1, want: time.Second},
		{name: "doubles", base: time.Second, maxDelay: time.Minute, attempt: 3, want: 4 * time.Second},
		{name: "capped", base: time.Second, maxDelay: 5 * time.Second, attempt: 4, want: 5 * time.Second},
		{name: "many attempts stay capped", base: 500 * time.Millisecond, maxDelay: 30 * time.Second, attempt: 200, want: 30 * time.Second},
		{name: "huge cap does not overflow", base: time.Hour, maxDelay: time.Duration(1<<63 - 1), attempt: 200, want: time.Duration(1<<63 - 1)},
		{name: "base above cap", base: time.Minute, maxDelay: time.Second, attempt: 1, want: time.Second},
		{name: "zero attempt is the first", base: time.Second, maxDelay: time.Minute, attempt: 0, want: time.Second},
		{name: "zero base", base: 0, maxDelay: time.Minute, attempt: 3, want: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for range 100 {
				got := backoff.Delay(tt.base, tt.maxDelay, tt.attempt)
				if got < tt.want/2 || got > tt.want {
					t.Fatalf("Delay(%s, %s, %d) = %s, want in [%s, %s]", tt.base, tt.maxDelay, tt.attempt, got, tt.want/2, tt.want)
				}
			}
		})
	}
}

func TestSleepWaits(t *testing.T) {
	start := time.Now()
	if err := backoff.Sleep(t.Context(), 20*time.Millisecond); err != nil {
		t.Fatalf("Sleep = %v, want nil", err)
	}
	if got := time.Since(start); got < 20*time.Millisecond {
		t.Errorf("Sleep returned after %s, want at least 20ms", got)
	}
}

func TestSleepStopsOnCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- backoff.Sleep(ctx, time.Hour) }()
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("Sleep cancelled = %v, want context.Canceled", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Sleep did not return after its context was cancelled")
	}
}

func TestSleepNonPositive(t *testing.T) {
	if err := backoff.Sleep(t.Context(), 0); err != nil {
		t.Errorf("Sleep(0) = %v, want nil", err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := backoff.Sleep(ctx, -time.Second); !errors.Is(err, context.Canceled) {
		t.Errorf("Sleep(-1s) on a cancelled context = %v, want context.Canceled", err)
	}
}
