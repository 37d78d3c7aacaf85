package fsdebounce

import (
	"context"
	"time"

	"github.com/fsnotify/fsnotify"
)

// Loop has Reader re-read for the events of Watcher: once Quiet after
// the first event of a burst (one edit is several events: write, chmod,
// rename, a kubelet symlink swap), and every Recheck regardless (some
// volume types send no events).
type Loop struct {
	Watcher *fsnotify.Watcher
	// Quiet is how long after a burst's first event Reread runs; the
	// events meanwhile join that burst.
	Quiet time.Duration
	// Recheck is the period of the re-reads without an event.
	Recheck time.Duration
	Reader  Reader
}

// Reader reads what is watched (config/reload's watchedFile,
// watcher's folderScan).
type Reader interface {
	// Reread re-reads what is watched; it runs on Run's goroutine.
	Reread()
	// WatchError is told the watcher's errors; the loop goes on.
	WatchError(err error)
}

// Run has Reader re-read as the events come until ctx ends or the
// watcher is closed; it returns nil then.
func (l Loop) Run(ctx context.Context) error {
	ticker := time.NewTicker(l.Recheck)
	defer ticker.Stop()
	var debounce <-chan time.Time
	for {
		select {
		case <-ctx.Done():
			return nil
		case _, ok := <-l.Watcher.Events:
			if !ok {
				return nil
			}
			if debounce == nil {
				debounce = time.After(l.Quiet)
			}
		case err, ok := <-l.Watcher.Errors:
			if !ok {
				return nil
			}
			l.Reader.WatchError(err)
		case <-debounce:
			debounce = nil
			l.Reader.Reread()
		case <-ticker.C:
			l.Reader.Reread()
		}
	}
}
