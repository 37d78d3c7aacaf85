package controller

import (
	"context"
	"time"

	"github.com/crowsnest-dev/crowsnest/watcher"
)

// NotifyView is the engine as the notifier sees it (pipeline.Apps): whether
// every source delivered its initial list, and each Application's
// AppProject as Argo CD goes by (ArgoProject).
type NotifyView struct {
	Engine *Engine
	// ArgoNamespace and InAppNamespace are ArgoProject's.
	ArgoNamespace  string
	InAppNamespace bool
}

// Synced reports whether every source delivered its initial list.
func (v NotifyView) Synced() bool {
	for _, s := range v.Engine.Sources {
		if !s.Synced() {
			return false
		}
	}
	return true
}

// Project returns the AppProject Argo CD goes by for a, nil when unknown:
// subscriptions come from it, never from a same-named one in another
// namespace.
func (v NotifyView) Project(a *watcher.App) *watcher.Project {
	return argoProject(v.Engine, v.ArgoNamespace, v.InAppNamespace, a)
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
