package setup

import (
	"context"
	"log/slog"
	"slices"
	"strings"
	"sync"

	"github.com/crowsnest-dev/crowsnest/watcher"
)

// AppsDir is what one read of an apps folder holds: the Applications
// (sorted by key) and AppProjects the file source emitted.
type AppsDir struct {
	mu       sync.Mutex
	Apps     []*watcher.App
	Projects []*watcher.Project
}

// OnAppEvent keeps each Application the file source emits.
func (o *AppsDir) OnAppEvent(ev watcher.AppEvent) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if ev.New != nil {
		o.Apps = append(o.Apps, ev.New)
	}
}

// OnProjectEvent keeps each AppProject the file source emits.
func (o *AppsDir) OnProjectEvent(ev watcher.ProjectEvent) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if ev.New != nil {
		o.Projects = append(o.Projects, ev.New)
	}
}

// ReadAppsDir reads the folder once with the file source, the same code
// `run --apps-dir` uses.
func ReadAppsDir(ctx context.Context, dir string) (*AppsDir, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	objs := &AppsDir{}
	src := &watcher.FileSource{Dir: dir, Log: slog.New(slog.DiscardHandler)}
	done := make(chan error, 1)
	go func() { done <- src.Start(ctx, objs) }()
	select {
	case err := <-done:
		if err == nil {
			err = ctx.Err()
		}
		return nil, err
	case <-src.SyncedDone():
	}
	cancel()
	if err := <-done; err != nil {
		return nil, err
	}
	objs.mu.Lock()
	defer objs.mu.Unlock()
	slices.SortFunc(objs.Apps, func(a, b *watcher.App) int { return strings.Compare(a.Key(), b.Key()) })
	return objs, nil
}
