package controller

import (
	"fmt"
	"strings"
	"time"

	"github.com/crowsnest-dev/crowsnest/controller/imageupdate"
	"github.com/crowsnest-dev/crowsnest/watcher"
)

// Sync windows as the image reconciler sees them: whether a window holds
// an Application's write-back now, until when, and which Applications
// have a held update.

// Pending reports whether a window holds an update of the Application.
func (r *ImageReconciler) Pending(key string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.held[key]
}

func (r *ImageReconciler) setHeld(key string, held bool) {
	r.mu.Lock()
	if r.held == nil {
		r.held = map[string]bool{}
	}
	if held {
		r.held[key] = true
	} else {
		delete(r.held, key)
		delete(r.said, saidKey{saidHold, key})
	}
	n := len(r.held)
	r.mu.Unlock()
	r.WindowMetrics.setHeld(n)
}

// pullRequestWindows is a ProjectWindows that says whether pull requests
// are opened and updated in deny windows (WindowSource: the config's
// git.pullRequestsInDenyWindows).
type pullRequestWindows interface {
	PullRequestsInDenyWindows() bool
}

// hold asks the windows whether write-backs are held for app now;
// proposal says the write-back opens a pull request, which the operator
// may let through deny windows (merging it is the deploy).
func (r *ImageReconciler) hold(app *watcher.App, proposal bool) imageupdate.Hold {
	if r.Windows == nil {
		return imageupdate.Hold{}
	}
	all := r.Windows.Set() // compiles the AppProjects' windows Broken reports on
	if err := r.Windows.Broken(app.Project); err != nil {
		return imageupdate.Hold{Held: true, Reason: "AppProject " + app.Project + " has invalid sync windows: " + err.Error()}
	}
	if pw, ok := r.Windows.(pullRequestWindows); ok && proposal && pw.PullRequestsInDenyWindows() {
		return imageupdate.Hold{}
	}
	set := all.HoldingUpdates().Matching(WindowRef(app))
	d := set.Decide(WindowRef(app), r.now(), false)
	if d.Allowed {
		return imageupdate.Hold{}
	}
	names := make([]string, 0, len(d.Active)+len(d.Matching))
	for _, w := range d.Active {
		names = append(names, w.Name())
	}
	if len(names) == 0 { // inactive allow windows deny
		for _, w := range d.Matching {
			names = append(names, w.Name())
		}
	}
	return imageupdate.Hold{Held: true, Reason: fmt.Sprintf("%s (%s)", d.Reason, strings.Join(names, ", "))}
}

// nextBoundary is how long until a window matching app opens or closes.
func (r *ImageReconciler) nextBoundary(app *watcher.App) (time.Duration, bool) {
	if r.Windows == nil {
		return 0, false
	}
	now := r.now()
	t, ok := r.Windows.Set().HoldingUpdates().Matching(WindowRef(app)).NextBoundary(now)
	if !ok {
		return 0, false
	}
	return t.Sub(now) + time.Second, true
}
