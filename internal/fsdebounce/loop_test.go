package fsdebounce_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/crowsnest-dev/crowsnest/internal/fsdebounce"
)

// waitLimit bounds every wait for something that must happen.
const waitLimit = 10 * time.Second

func newWatcher(t *testing.T) (*fsnotify.Watcher, string) {
	t.Helper()
	dir := t.TempDir()
	w, err := fsnotify.NewWatcher()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = w.Close() })
	if err := w.Add(dir); err != nil {
		t.Fatal(err)
	}
	return w, dir
}

func run(ctx context.Context, l fsdebounce.Loop) <-chan error {
	done := make(chan error, 1)
	go func() { done <- l.Run(ctx) }()
	return done
}

func receive[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(waitLimit):
		t.Fatalf("%s: nothing after %s", what, waitLimit)
	}
	var zero T
	return zero
}

// rereads is a Reader that signals each Reread and fails the test on a
// watch error.
type rereads struct {
	t     *testing.T
	fired chan<- struct{}
}

func (r rereads) Reread() { r.fired <- struct{}{} }

func (r rereads) WatchError(err error) { r.t.Errorf("watch error: %v", err) }

func TestLoopFiresAfterABurstOfEvents(t *testing.T) {
	w, dir := newWatcher(t)
	fired := make(chan struct{}, 100)
	ctx, cancel := context.WithCancel(t.Context())
	done := run(ctx, fsdebounce.Loop{
		Watcher: w, Quiet: 20 * time.Millisecond, Recheck: time.Hour,
		Reader: rereads{t: t, fired: fired},
	})
	for i := range 5 {
		if err := os.WriteFile(filepath.Join(dir, "f"), []byte{byte(i)}, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	receive(t, fired, "Reread after writes")
	cancel()
	if err := receive(t, done, "Run after cancel"); err != nil {
		t.Errorf("Run = %v, want nil", err)
	}
}

func TestLoopRechecksWithoutEvents(t *testing.T) {
	w, _ := newWatcher(t)
	fired := make(chan struct{}, 100)
	done := run(t.Context(), fsdebounce.Loop{
		Watcher: w, Quiet: time.Hour, Recheck: 10 * time.Millisecond,
		Reader: rereads{t: t, fired: fired},
	})
	receive(t, fired, "Reread on the recheck timer")
	receive(t, fired, "second Reread on the recheck timer")
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := receive(t, done, "Run after the watcher closed"); err != nil {
		t.Errorf("Run = %v, want nil", err)
	}
}
