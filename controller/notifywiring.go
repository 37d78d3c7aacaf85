package controller

import (
	"context"
	"time"

	"github.com/crowsnest-dev/crowsnest/watcher"
)

// SourcesSynced reports whether every source delivered its initial list,
// for pipeline.Notifier.Synced.
func SourcesSynced(sources []Source) func() bool {
	return func() bool {
		for _, s := range sources {
			if !s.Synced() {
				return false
			}
		}
		return true
	}
}

// EngineProject looks an Application's AppProject up among those the
// engine watches, for pipeline.Notifier.Project: the one in the Application's
// namespace, else the one of that name in any namespace (Argo CD keeps
// projects in its own).
func EngineProject(e *Engine) func(*watcher.App) *watcher.Project {
	return func(a *watcher.App) *watcher.Project {
		if p := e.Project(a.Namespace + "/" + a.Project); p != nil {
			return p
		}
		for _, p := range e.Projects() {
			if p.Name == a.Project {
				return p
			}
		}
		return nil
	}
}

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
