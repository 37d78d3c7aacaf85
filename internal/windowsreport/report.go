package windowsreport

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/crowsnest-dev/crowsnest/config"
	"github.com/crowsnest-dev/crowsnest/controller"
	"github.com/crowsnest-dev/crowsnest/internal/setup"
	"github.com/crowsnest-dev/crowsnest/watcher"
	"github.com/crowsnest-dev/crowsnest/windows"
)

// Options say where the windows and Applications are read from and when
// they are evaluated.
type Options struct {
	// ConfigPath is a crowsnest config file whose syncWindows apply; empty
	// for none.
	ConfigPath string
	// AppsDir is a folder of Application and AppProject files, as run
	// --apps-dir reads it; empty for none.
	AppsDir string
	// Cluster reads Applications and AppProjects from the cluster of
	// Kubeconfig (empty: $KUBECONFIG or in-cluster) instead of AppsDir:
	// the Applications of Namespace (empty: every namespace) and the
	// AppProjects of ArgoCDNamespace, the ones Argo CD goes by.
	Cluster                                bool
	Kubeconfig, Namespace, ArgoCDNamespace string
	// UserAgent is the kube client's.
	UserAgent string
	// App narrows the report to one Application (name or namespace/name)
	// and the windows that select it; it needs AppsDir or Cluster.
	App string
	// At is the time to evaluate at.
	At time.Time
}

// Window is one window as `crowsnest windows` shows it.
type Window struct {
	Name        string     `json:"name"`
	Kind        string     `json:"kind"`
	Schedule    string     `json:"schedule"`
	Duration    string     `json:"duration"`
	TimeZone    string     `json:"timeZone"`
	Active      bool       `json:"active"`
	NextOpen    *time.Time `json:"nextOpen,omitempty"`
	NextClose   *time.Time `json:"nextClose,omitempty"`
	HoldsImages bool       `json:"holdImageUpdates"`
	Description string     `json:"description,omitempty"`
}

// AppDecision is one Application's window decision.
type AppDecision struct {
	App           string   `json:"app"`
	SyncAllowed   bool     `json:"syncAllowed"`
	Reason        string   `json:"reason"`
	ManualAllowed bool     `json:"manualSyncAllowed"`
	ManualReason  string   `json:"manualReason"`
	UpdatesHeld   bool     `json:"imageUpdatesHeld"`
	Windows       []string `json:"windows"`
	ActiveWindows []string `json:"activeWindows"`
}

// Report is what `crowsnest windows` shows; -o json prints it as is.
type Report struct {
	At       time.Time     `json:"at"`
	Windows  []Window      `json:"windows"`
	Apps     []AppDecision `json:"applications,omitempty"`
	Problems []string      `json:"problems,omitempty"`
	// Undecided are the Applications of AppProjects with a window in
	// Problems: no decision is given for them.
	Undecided []string `json:"undecided,omitempty"`
}

// Build reads the windows and Applications o names and evaluates them at
// o.At. A window of an AppProject that does not compile is in the
// report's Problems (see Report.Err), not an error: the rest still shows.
func Build(ctx context.Context, o Options) (*Report, error) {
	if o.App != "" && o.AppsDir == "" && !o.Cluster {
		return nil, errors.New("windowsreport: App needs AppsDir or Cluster")
	}
	var set windows.Set
	if o.ConfigPath != "" {
		cfg, err := config.Load(o.ConfigPath)
		if err != nil {
			return nil, err
		}
		if set, err = windows.FromConfig(cfg.Windows); err != nil {
			return nil, err
		}
	}
	rep := &Report{At: o.At, Windows: []Window{}}
	var apps []*watcher.App
	broken := map[string]bool{} // AppProjects with a window that does not compile
	if o.AppsDir != "" || o.Cluster {
		var err error
		if set, apps, err = o.readApps(ctx, set, rep, broken); err != nil {
			return nil, err
		}
	}
	shown := set
	if o.App != "" {
		shown = set.Matching(controller.WindowRef(apps[0]))
	}
	for _, w := range shown {
		rep.Windows = append(rep.Windows, rowOf(w, o.At))
	}
	decideApps(rep, set, apps, broken, o.At)
	return rep, nil
}

// readApps reads the Applications and AppProjects (Cluster or AppsDir),
// adds the projects' windows to set, and marks in broken the projects
// with a window that does not compile (its problem in rep). With App,
// only that Application is returned.
func (o *Options) readApps(ctx context.Context, set windows.Set, rep *Report, broken map[string]bool) (windows.Set, []*watcher.App, error) {
	var objs *setup.AppsDir
	var err error
	if o.Cluster {
		objs, err = o.readCluster(ctx)
	} else {
		objs, err = setup.ReadAppsDir(ctx, o.AppsDir)
	}
	if err != nil {
		return nil, nil, err
	}
	for _, p := range objs.Projects {
		ps, err := windows.FromAppProject(p.Object.Object)
		if err != nil {
			// The rest of the project's windows still show, but its
			// Applications get no decision: Argo CD refuses their
			// syncs and the daemon holds their write-backs.
			rep.Problems = append(rep.Problems, err.Error())
			broken[p.Name] = true
		}
		set = append(set, ps...)
	}
	apps := objs.Apps
	if o.App != "" {
		apps = slices.DeleteFunc(apps, func(a *watcher.App) bool { return a.Name != o.App && a.Key() != o.App })
		if len(apps) == 0 {
			return nil, nil, fmt.Errorf("--app %s: no such Application", o.App)
		}
	}
	return set, apps, nil
}

// decideApps adds each Application's decision to rep; those of a broken
// AppProject are undecided.
func decideApps(rep *Report, set windows.Set, apps []*watcher.App, broken map[string]bool, now time.Time) {
	for _, a := range apps {
		if broken[cmp.Or(a.Project, "default")] {
			rep.Undecided = append(rep.Undecided, a.Key())
			continue
		}
		ref := controller.WindowRef(a)
		d := set.Decide(ref, now, false)
		m := set.Decide(ref, now, true)
		held := !set.HoldingUpdates().Decide(ref, now, false).Allowed
		ad := AppDecision{App: a.Key(), SyncAllowed: d.Allowed, Reason: string(d.Reason),
			ManualAllowed: m.Allowed, ManualReason: string(m.Reason), UpdatesHeld: held,
			Windows: names(d.Matching), ActiveWindows: names(d.Active)}
		rep.Apps = append(rep.Apps, ad)
	}
}

// Err is the command's error when a window is invalid, nil else.
func (rep *Report) Err() error {
	if len(rep.Problems) == 0 {
		return nil
	}
	msg := fmt.Sprintf("%d sync window(s) invalid: %s", len(rep.Problems), strings.Join(rep.Problems, "; "))
	if len(rep.Undecided) > 0 {
		msg += fmt.Sprintf("; no decision for %s (their AppProject's windows must be fixed first)", strings.Join(rep.Undecided, ", "))
	}
	return errors.New(msg)
}

func rowOf(w *windows.Window, now time.Time) Window {
	sp := w.Spec()
	r := Window{
		Name: w.Name(), Kind: string(w.Kind()), Schedule: sp.Schedule, Duration: w.Duration().String(),
		TimeZone: w.Location().String(), Active: w.Active(now), HoldsImages: w.HoldsImageUpdates(),
		Description: w.Description(),
	}
	if t, ok := w.NextOpen(now); ok {
		r.NextOpen = &t
	}
	if t, ok := w.NextClose(now); ok {
		r.NextClose = &t
	}
	return r
}

func names(s windows.Set) []string {
	out := make([]string, 0, len(s))
	for _, w := range s {
		out = append(out, w.Name())
	}
	return out
}
