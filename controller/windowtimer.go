package controller

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"k8s.io/client-go/dynamic"

	"github.com/crowsnest-dev/crowsnest/triggers"
	"github.com/crowsnest-dev/crowsnest/watcher"
	"github.com/crowsnest-dev/crowsnest/windows"
	"github.com/crowsnest-dev/crowsnest/writeback/kube"
)

// windowRecheck bounds how long the timer sleeps without a boundary in
// sight, so windows added by a config reload or an AppProject change are
// picked up even if nobody calls Wake.
const windowRecheck = time.Minute

// WindowSet gives the sync windows in force now (WindowSource).
type WindowSet interface {
	Set() windows.Set
}

// HeldUpdates says whether an Application has an update a window held
// (ImageReconciler).
type HeldUpdates interface {
	Pending(key string) bool
}

// Notifier hears crowsnest's own events on an Application
// (pipeline.Notifier).
type Notifier interface {
	OnEvent(app *watcher.App, ev triggers.Event)
}

// WindowTimer wakes at the next boundary of every window in use, instead
// of finding out when some Application happens to reconcile. At each
// boundary it enqueues the Applications of the windows that changed (so an
// update a window held is written at once), requests a sync for
// Applications of an allow window with syncOnOpen that just opened, and
// reports openings and closings.
type WindowTimer struct {
	// Windows are the windows in force (WindowSource).
	Windows WindowSet
	Engine  *Engine
	// Apps patches Applications' operation field for syncOnOpen; nil
	// disables sync requests (local mode).
	Apps dynamic.Interface
	// Held, when set, says whether an Application has an update a window
	// held (ImageReconciler): syncOnOpen syncs it although it is Synced.
	Held HeldUpdates
	// Notifier, when set, hears a window opened/closed event for each
	// Application the window matches.
	Notifier Notifier
	Metrics  *WindowMetrics
	Log      *slog.Logger
	// Now is the clock; nil is time.Now. Waiting uses real timers for
	// the distance Now reports.
	Now func() time.Time

	wakeOnce sync.Once
	wake     chan struct{}
}

func (t *WindowTimer) wakeCh() chan struct{} {
	t.wakeOnce.Do(func() { t.wake = make(chan struct{}, 1) })
	return t.wake
}

// Wake makes the timer look at the windows again now (config reloaded,
// an AppProject changed).
func (t *WindowTimer) Wake() {
	select {
	case t.wakeCh() <- struct{}{}:
	default:
	}
}

// Start runs until ctx ends.
func (t *WindowTimer) Start(ctx context.Context) error {
	wake := t.wakeCh()
	active := map[string]bool{}
	first := true
	for {
		now := t.now()
		set := t.Windows.Set()
		t.check(ctx, set, now, active, first)
		first = false
		wait := windowRecheck
		if next, ok := set.NextBoundary(now); ok && next.Sub(now) < wait {
			// A hair past the boundary, so the window reads as changed.
			wait = next.Sub(now) + 10*time.Millisecond
		}
		timer := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			timer.Stop()
			return nil
		case <-wake:
		case <-timer.C:
		}
		timer.Stop()
	}
}

// check compares each window's state with the last seen and acts on
// changes. The first pass only records (nothing "opened" at start-up).
func (t *WindowTimer) check(ctx context.Context, set windows.Set, now time.Time, active map[string]bool, first bool) {
	seen := make(map[string]bool, len(set))
	open := 0
	for _, w := range set {
		name := w.Name()
		seen[name] = true
		is := w.Active(now)
		if is {
			open++
		}
		was, known := active[name]
		active[name] = is
		if first || !known || was == is {
			continue
		}
		t.changed(ctx, w, is, now)
	}
	for name := range active {
		if !seen[name] {
			delete(active, name)
		}
	}
	t.Metrics.setActive(open)
}

func (t *WindowTimer) changed(ctx context.Context, w *windows.Window, opened bool, now time.Time) {
	verb := "closed"
	if opened {
		verb = "opened"
	}
	t.Log.Info("sync window "+verb, "window", w.Name(), "kind", w.Kind(), "description", w.Description())
	for _, key := range t.Engine.AppKeys() {
		app := t.Engine.App(key)
		if app == nil || !w.Matches(WindowRef(app)) {
			continue
		}
		if w.HoldsImageUpdates() {
			t.Engine.Enqueue(key) // held updates go out now
		}
		if t.Notifier != nil {
			typ := triggers.EventSyncWindowClosed
			if opened {
				typ = triggers.EventSyncWindowOpened
			}
			t.Notifier.OnEvent(app, triggers.Event{Type: typ, Window: w.Name(), Message: w.Description(), Time: now,
				ID: typ + "|" + w.Name() + "|" + now.UTC().Truncate(time.Second).Format(time.RFC3339) + "|" + key})
		}
		if opened && w.Kind() == windows.Allow && w.SyncOnOpen() {
			t.syncOnOpen(ctx, w, key, app)
		}
	}
}

// syncOnOpen requests an Argo CD sync for an Application that is OutOfSync
// or has a held update, unless an operation is already under way.
func (t *WindowTimer) syncOnOpen(ctx context.Context, w *windows.Window, key string, app *watcher.App) {
	pending := t.Held != nil && t.Held.Pending(key)
	if app.SyncStatus != "OutOfSync" && !pending {
		return
	}
	if app.OperationPending || app.OperationPhase == "Running" {
		t.Log.Debug("sync already under way; not requesting another", "app", key, "window", w.Name())
		return
	}
	if t.Apps == nil {
		t.Log.Info("would request a sync (no cluster)", "app", key, "window", w.Name())
		return
	}
	err := kube.RequestSync(ctx, t.Apps, app.Namespace, app.Name, "sync window "+w.Name()+" opened")
	switch {
	case errors.Is(err, kube.ErrOperationRunning):
		t.Log.Debug("sync already under way; not requesting another", "app", key, "window", w.Name())
		return
	case err != nil:
		t.Log.Warn("requesting a sync failed", "app", key, "window", w.Name(), "error", err)
		return
	}
	t.Metrics.syncRequested()
	t.Log.Info("sync requested", "app", key, "window", w.Name())
}

func (t *WindowTimer) now() time.Time {
	if t.Now != nil {
		return t.Now()
	}
	return time.Now()
}
