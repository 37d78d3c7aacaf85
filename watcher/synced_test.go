package watcher_test

import (
	"testing"

	"github.com/crowsnest-dev/crowsnest/watcher"
)

// The zero SyncSignal is open; Mark closes it once and for good, however
// often it is called.
func TestSyncSignal(t *testing.T) {
	var s watcher.SyncSignal
	if s.IsDone() {
		t.Fatal("a new signal is done")
	}
	select {
	case <-s.Done():
		t.Fatal("a new signal's channel is closed")
	default:
	}
	s.Mark()
	s.Mark()
	if !s.IsDone() {
		t.Error("IsDone() = false after Mark")
	}
	select {
	case <-s.Done():
	default:
		t.Error("the channel is open after Mark")
	}
}
