package windows

import (
	"errors"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/labels"

	"github.com/crowsnest-dev/crowsnest/config"
	"github.com/crowsnest-dev/crowsnest/windows/spec"
)

// Kind is allow or deny, spelled as in Argo CD.
type Kind string

// The two kinds of window.
const (
	Allow Kind = config.WindowAllow
	Deny  Kind = config.WindowDeny
)

// Window is a compiled sync window: its schedule parsed, its zone loaded and
// its selectors compiled, so evaluating it never fails. It is immutable and
// safe for concurrent use.
type Window struct {
	name     string
	spec     config.SyncWindow
	sched    *spec.Schedule
	duration time.Duration
	apps     []*spec.Glob
	nss      []*spec.Glob
	clusters []*spec.Glob
	projects []*spec.Glob
	labels   labels.Selector // nil when unset
	// project limits an AppProject's windows to that project's Applications.
	project string
}

// Error is a window that does not compile. It names the window (where it
// came from and its description) and the field, so a user can find it.
type Error struct {
	// Window says where the window came from, e.g. "syncWindows[2]".
	Window      string
	Description string
	// Field is the field at fault, e.g. "schedule".
	Field string
	Err   error
}

func (e *Error) Error() string {
	s := "sync window " + e.Window
	if e.Description != "" {
		s += fmt.Sprintf(" (%q)", e.Description)
	}
	return s + ": " + e.Field + ": " + e.Err.Error()
}

// Unwrap returns the underlying problem (e.g. spec.ErrNeverFires).
func (e *Error) Unwrap() error { return e.Err }

// Compile checks and compiles one window. name says where it came from and
// appears in errors. Unlike config validation, a window without selectors is
// accepted (Argo CD allows it; it matches nothing). All problems are
// returned, joined, each as an *Error.
func Compile(name string, sw config.SyncWindow) (*Window, error) {
	w := &Window{name: name, spec: sw, duration: sw.Duration.Duration}
	var errs []error
	bad := func(field string, err error) {
		errs = append(errs, &Error{Window: name, Description: sw.Description, Field: field, Err: err})
	}
	if sw.Kind != config.WindowAllow && sw.Kind != config.WindowDeny {
		bad("kind", fmt.Errorf("unsupported value %q, want allow or deny", sw.Kind))
	}
	loc, err := spec.LoadZone(sw.TimeZone)
	if err != nil {
		bad("timeZone", err)
		loc = time.UTC // still check the schedule
	}
	if w.sched, err = spec.Parse(sw.Schedule, loc); err != nil {
		bad("schedule", err)
	}
	if w.duration <= 0 || w.duration > spec.MaxDuration {
		bad("duration", fmt.Errorf("must be positive and at most %s, got %s", spec.MaxDuration, sw.Duration))
	}
	for _, list := range []struct {
		field    string
		patterns []string
		out      *[]*spec.Glob
	}{
		{"applications", sw.Applications, &w.apps}, {"namespaces", sw.Namespaces, &w.nss},
		{"clusters", sw.Clusters, &w.clusters}, {"projects", sw.Projects, &w.projects},
	} {
		for i, p := range list.patterns {
			g, err := spec.CompileGlob(p)
			if err != nil {
				bad(fmt.Sprintf("%s[%d]", list.field, i), err)
				continue
			}
			*list.out = append(*list.out, g)
		}
	}
	if sw.LabelSelector != "" {
		if w.labels, err = labels.Parse(sw.LabelSelector); err != nil {
			bad("labelSelector", err)
		}
	}
	if sw.SyncOnOpen && sw.Kind == config.WindowDeny {
		bad("syncOnOpen", errors.New("only allow windows can start syncs"))
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return w, nil
}

// Name says where the window came from, e.g. "syncWindows[2]" or
// "AppProject argocd/payments spec.syncWindows[0]".
func (w *Window) Name() string { return w.name }

// String names the window for logs and events: its name and description.
func (w *Window) String() string {
	if w.spec.Description == "" {
		return w.name
	}
	return fmt.Sprintf("%s (%q)", w.name, w.spec.Description)
}

// Spec returns the window as written.
func (w *Window) Spec() config.SyncWindow { return w.spec }

// Kind returns Allow or Deny.
func (w *Window) Kind() Kind { return Kind(w.spec.Kind) }

// Description is the user's description of the window, if any.
func (w *Window) Description() string { return w.spec.Description }

// Location is the zone the schedule is read in.
func (w *Window) Location() *time.Location { return w.sched.Location() }

// Duration is how long the window stays open after each start.
func (w *Window) Duration() time.Duration { return w.duration }

// ManualSync reports whether manual syncs may pass the window.
func (w *Window) ManualSync() bool { return w.spec.ManualSync }

// HoldsImageUpdates reports whether the window gates crowsnest's write-backs.
func (w *Window) HoldsImageUpdates() bool { return w.spec.HoldsImageUpdates() }

// SyncOnOpen reports whether opening the window should start syncs.
func (w *Window) SyncOnOpen() bool { return w.spec.SyncOnOpen }

// Project is the AppProject whose windows this belongs to ("" for windows
// from crowsnest's config).
func (w *Window) Project() string { return w.project }

// Active reports whether the window is open at now: some start s has
// s <= now < s+duration.
func (w *Window) Active(now time.Time) bool { return w.sched.Active(now, w.duration) }

// LastStart returns the start of the occurrence that keeps the window open
// at now, or false if it is closed.
func (w *Window) LastStart(now time.Time) (time.Time, bool) {
	return w.sched.LastStart(now, w.duration)
}

// NextOpen returns the first instant strictly after now at which the window
// goes from closed to open; while it is open that is after the current run
// closes. False if it does not happen within spec.Horizon.
func (w *Window) NextOpen(now time.Time) (time.Time, bool) { return w.sched.NextOpen(now, w.duration) }

// NextClose returns the first instant strictly after now at which the window
// goes from open to closed: the end of the current run, or of the next one
// while it is closed. Overlapping occurrences form one run. False if it does
// not happen within spec.Horizon (a window that never closes).
func (w *Window) NextClose(now time.Time) (time.Time, bool) {
	return w.sched.NextClose(now, w.duration)
}

// nextBoundary is the next instant after now at which Active changes.
func (w *Window) nextBoundary(now time.Time) (time.Time, bool) {
	if w.Active(now) {
		return w.NextClose(now)
	}
	return w.NextOpen(now)
}
