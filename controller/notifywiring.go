package controller

import (
	"context"
	"time"

	"github.com/crowsnest-dev/crowsnest/watcher"
)

// SourcesSynced reports whether every source delivered its initial list,
// for Notifier.Synced.
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
// engine watches, for Notifier.Project: the one in the Application's
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

// pruneLater deletes, once the sources synced and PruneAfter passed, the
// state of Applications that were not observed since start: they were
// deleted while crowsnest was down. It keeps the state store bounded.
func (n *Notifier) pruneLater(ctx context.Context) {
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for !n.isSynced() {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
	select {
	case <-ctx.Done():
		return
	case <-time.After(n.PruneAfter):
	}
	n.mu.Lock()
	var stale []string
	for id := range n.states {
		if !n.seen[id] {
			stale = append(stale, id)
		}
	}
	n.mu.Unlock()
	for _, id := range stale {
		if err := n.State.Save(ctx, id, NotifyState{}); err != nil {
			n.Log.Warn("pruning notification state failed", "id", id, "error", err)
			continue
		}
		n.mu.Lock()
		if !n.seen[id] {
			delete(n.states, id)
		}
		n.mu.Unlock()
	}
	if len(stale) > 0 {
		n.Log.Info("notification state of deleted applications pruned", "count", len(stale))
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
