package pipeline

import (
	"testing"
	"time"
)

// The wait between failed loads of the notification state grows to 30 s
// and stays there: it never wraps to nothing, which would retry the
// apiserver in a tight loop (1<<attempt seconds overflowed after 34).
func TestLoadRetryDelayStaysBounded(t *testing.T) {
	for attempt := range 200 {
		d := loadRetryDelay(attempt)
		if d < 500*time.Millisecond || d > 30*time.Second {
			t.Fatalf("attempt %d: wait %v, want between 0.5 s and 30 s", attempt, d)
		}
	}
	if d := loadRetryDelay(100); d < 15*time.Second {
		t.Errorf("attempt 100: wait %v, want the 30 s cap (jittered down to no less than 15 s)", d)
	}
}
