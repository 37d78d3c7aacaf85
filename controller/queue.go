package controller

import (
	"errors"
	"sort"
	"strings"
	"time"

	"github.com/crowsnest-dev/crowsnest/watcher"
)

// OnAppEvent records the Application's latest state and queues its key.
// Sources call it in the order they observe changes.
func (e *Engine) OnAppEvent(ev watcher.AppEvent) {
	if e.Transitions != nil {
		e.Transitions.OnAppEvent(ev)
	}
	e.init()
	key := ev.Key()
	e.mu.Lock()
	if ev.Type == watcher.Deleted {
		delete(e.apps, key)
	} else {
		e.apps[key] = ev.Keep() // its Object as JSON until App asks
	}
	n := len(e.apps)
	e.mu.Unlock()
	e.Metrics.setApps(n)
	e.queue.Add(key)
}

// OnProjectEvent records the AppProject's latest state. Project changes
// queue every Application of that project, since project settings (sync
// windows, subscriptions) govern them.
func (e *Engine) OnProjectEvent(ev watcher.ProjectEvent) {
	e.init()
	p := ev.New
	if p == nil {
		p = ev.Old
	}
	e.mu.Lock()
	if ev.Type == watcher.Deleted {
		delete(e.projects, p.Key())
	} else {
		e.projects[p.Key()] = p
	}
	var keys []string
	for k, a := range e.apps {
		if a.Project() == p.Name {
			keys = append(keys, k)
		}
	}
	e.mu.Unlock()
	for _, k := range keys {
		e.queue.Add(k)
	}
}

// Enqueue asks for a reconcile of key; other event sources (registry,
// windows) use it.
func (e *Engine) Enqueue(key string) {
	e.init()
	e.queue.Add(key)
}

// EnqueueAfter asks for a reconcile of key after d.
func (e *Engine) EnqueueAfter(key string, d time.Duration) {
	e.init()
	e.queue.AddAfter(key, d)
}

// RequeueAll queues every known Application, e.g. after a config reload.
func (e *Engine) RequeueAll() {
	for _, k := range e.AppKeys() {
		e.queue.Add(k)
	}
}

// RequeueNamespace queues every known Application of namespace, e.g.
// after an ImageUpdater there changed.
func (e *Engine) RequeueNamespace(namespace string) {
	for _, k := range e.AppKeys() {
		if strings.HasPrefix(k, namespace+"/") {
			e.queue.Add(k)
		}
	}
}

// App returns the latest observed state of the Application key, or nil:
// a copy the caller may keep or change, its Object not decoded until the
// caller asks (App.Decoded), as only writes and plans do.
func (e *Engine) App(key string) *watcher.App {
	e.init()
	e.mu.RLock()
	a := e.apps[key]
	e.mu.RUnlock()
	return a.Lazy()
}

// AppView returns the latest observed state of the Application key
// without its Object, or nil: the engine's own copy, which the caller
// must not change. It allocates nothing.
func (e *Engine) AppView(key string) *watcher.App {
	e.init()
	e.mu.RLock()
	a := e.apps[key]
	e.mu.RUnlock()
	if a == nil {
		return nil
	}
	return a.View()
}

// AppKeys returns the keys of all known Applications, sorted.
func (e *Engine) AppKeys() []string {
	e.init()
	e.mu.RLock()
	keys := make([]string, 0, len(e.apps))
	for k := range e.apps {
		keys = append(keys, k)
	}
	e.mu.RUnlock()
	sort.Strings(keys)
	return keys
}

// AppCount returns how many Applications the engine knows.
func (e *Engine) AppCount() int {
	e.init()
	e.mu.RLock()
	defer e.mu.RUnlock()
	return len(e.apps)
}

// Project returns the AppProject with namespace/name key, or nil.
func (e *Engine) Project(key string) *watcher.Project {
	e.init()
	e.mu.RLock()
	defer e.mu.RUnlock()
	return e.projects[key]
}

// Projects returns every known AppProject.
func (e *Engine) Projects() []*watcher.Project {
	e.init()
	e.mu.RLock()
	defer e.mu.RUnlock()
	out := make([]*watcher.Project, 0, len(e.projects))
	for _, p := range e.projects {
		out = append(out, p)
	}
	return out
}

// terminalError marks an error that retrying cannot fix.
type terminalError struct{ err error }

func (t terminalError) Error() string { return t.err.Error() }
func (t terminalError) Unwrap() error { return t.err }

// Terminal marks err as not retryable: the engine reports it and waits for
// the Application (or the config) to change instead of retrying.
func Terminal(err error) error {
	if err == nil {
		return nil
	}
	return terminalError{err}
}

// IsTerminal reports whether err was marked with Terminal.
func IsTerminal(err error) bool {
	var t terminalError
	return errors.As(err, &t)
}
