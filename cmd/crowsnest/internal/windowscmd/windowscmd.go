package windowscmd

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"

	"github.com/crowsnest-dev/crowsnest/config"
	"github.com/crowsnest-dev/crowsnest/controller"
	"github.com/crowsnest-dev/crowsnest/internal/setup"
	"github.com/crowsnest-dev/crowsnest/watcher"
	"github.com/crowsnest-dev/crowsnest/windows"
)

type options struct {
	userAgent  string
	configPath string
	appsDir    string
	kubeconfig string
	namespace  string
	argoNS     string
	cluster    bool
	app        string
	at         string
	output     string
}

// NewCommand is `crowsnest windows`; userAgent is its kube client's.
func NewCommand(userAgent string) *cobra.Command {
	o := &options{userAgent: userAgent}
	cmd := &cobra.Command{
		Use:   "windows",
		Short: "List sync windows: which are open, when they open and close next, and what they decide",
		Long: `Windows lists the sync windows of crowsnest's config (--config) and of the
AppProjects under --apps-dir, each with whether it is active and when it opens
and closes next. With --apps-dir, every Application gets the decision the
windows make for it (Argo CD's table: an active deny wins, an active allow
allows, inactive allow windows deny) and whether image write-backs are held;
--app narrows that to one Application and lists its windows. Both the
decision for automated syncs and for manual ones (windows with manualSync
let those through) are shown. --at evaluates
at another time (RFC 3339, e.g. 2026-12-24T18:00:00+01:00).`,
		Args:         cobra.NoArgs,
		SilenceUsage: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return o.run(cmd.Context(), cmd.OutOrStdout())
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.configPath, "config", "", "crowsnest config file whose syncWindows apply")
	f.StringVar(&o.appsDir, "apps-dir", "", "folder of Application and AppProject files (as run --apps-dir reads)")
	f.BoolVar(&o.cluster, "cluster", false, "read Applications and AppProjects from the cluster (--kubeconfig, $KUBECONFIG or in-cluster)")
	f.StringVar(&o.kubeconfig, "kubeconfig", "", "kubeconfig for --cluster")
	f.StringVarP(&o.namespace, "namespace", "n", "", "with --cluster, only Applications in this namespace")
	f.StringVar(&o.argoNS, "argocd-namespace", "argocd", "with --cluster, Argo CD's namespace: the AppProjects there are the ones Argo CD and crowsnest run go by")
	f.StringVar(&o.app, "app", "", "only this Application (name or namespace/name) from --apps-dir")
	f.StringVar(&o.at, "at", "", "evaluate at this time instead of now (RFC 3339)")
	f.StringVarP(&o.output, "output", "o", "text", "text or json")
	return cmd
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

func (o *options) run(ctx context.Context, out io.Writer) error {
	now, err := o.check()
	if err != nil {
		return err
	}
	var set windows.Set
	if o.configPath != "" {
		cfg, err := config.Load(o.configPath)
		if err != nil {
			return err
		}
		if set, err = windows.FromConfig(cfg.Windows); err != nil {
			return err
		}
	}
	rep := Report{At: now, Windows: []Window{}}
	var apps []*watcher.App
	broken := map[string]bool{} // AppProjects with a window that does not compile
	if o.appsDir != "" || o.cluster {
		if set, apps, err = o.readApps(ctx, set, &rep, broken); err != nil {
			return err
		}
	}
	shown := set
	if o.app != "" {
		shown = set.Matching(controller.WindowRef(apps[0]))
	}
	for _, w := range shown {
		rep.Windows = append(rep.Windows, rowOf(w, now))
	}
	decideApps(&rep, set, apps, broken, now)
	if o.output == "json" {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		err = enc.Encode(rep)
	} else {
		err = printWindows(out, &rep)
	}
	if err != nil {
		return err
	}
	return rep.problems()
}

// check checks the flags and returns the time to evaluate at (--at, or
// now).
func (o *options) check() (time.Time, error) {
	if o.output != "text" && o.output != "json" {
		return time.Time{}, fmt.Errorf("--output: unsupported value %q, want text or json", o.output)
	}
	if o.app != "" && o.appsDir == "" && !o.cluster {
		return time.Time{}, errors.New("--app needs --apps-dir or --cluster")
	}
	if o.appsDir != "" && o.cluster {
		return time.Time{}, errors.New("--apps-dir and --cluster exclude each other")
	}
	now := time.Now()
	if o.at != "" {
		t, err := time.Parse(time.RFC3339, o.at)
		if err != nil {
			return time.Time{}, fmt.Errorf("--at: want RFC 3339 such as 2026-12-24T18:00:00Z: %w", err)
		}
		now = t
	}
	return now, nil
}

// readApps reads the Applications and AppProjects (--cluster or
// --apps-dir), adds the projects' windows to set, and marks in broken the
// projects with a window that does not compile (its problem in rep). With
// --app, only that Application is returned.
func (o *options) readApps(ctx context.Context, set windows.Set, rep *Report, broken map[string]bool) (windows.Set, []*watcher.App, error) {
	var objs *setup.AppsDir
	var err error
	if o.cluster {
		objs, err = o.readCluster(ctx)
	} else {
		objs, err = setup.ReadAppsDir(ctx, o.appsDir)
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
	if o.app != "" {
		apps = slices.DeleteFunc(apps, func(a *watcher.App) bool { return a.Name != o.app && a.Key() != o.app })
		if len(apps) == 0 {
			return nil, nil, fmt.Errorf("--app %s: no such Application", o.app)
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

// problems is the command's error when a window is invalid, nil else.
func (rep *Report) problems() error {
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

func printWindows(out io.Writer, rep *Report) error {
	fmt.Fprintf(out, "at %s\n\n", rep.At.Format(time.RFC3339))
	if len(rep.Windows) == 0 {
		fmt.Fprintln(out, "no sync windows")
	} else {
		tw := tabwriter.NewWriter(out, 2, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "WINDOW\tKIND\tSCHEDULE\tDURATION\tZONE\tACTIVE\tNEXT OPEN\tNEXT CLOSE\tDESCRIPTION")
		for i := range rep.Windows {
			r := &rep.Windows[i]
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%t\t%s\t%s\t%s\n", r.Name, r.Kind, r.Schedule, r.Duration, r.TimeZone,
				r.Active, inZone(r.NextOpen, r.TimeZone), inZone(r.NextClose, r.TimeZone), r.Description)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	if len(rep.Apps) > 0 {
		fmt.Fprintln(out)
		tw := tabwriter.NewWriter(out, 2, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "APPLICATION\tAUTO SYNC\tMANUAL SYNC\tREASON\tIMAGE UPDATES\tACTIVE WINDOWS")
		for _, a := range rep.Apps {
			syncs, manual, updates := "allowed", "allowed", "written"
			if !a.SyncAllowed {
				syncs = "denied"
			}
			if !a.ManualAllowed {
				manual = "denied"
			}
			if a.UpdatesHeld {
				updates = "held"
			}
			active := strings.Join(a.ActiveWindows, "; ")
			if active == "" {
				active = "-"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", a.App, syncs, manual, a.Reason, updates, active)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	for _, p := range rep.Problems {
		fmt.Fprintf(out, "\nproblem: %s\n", p)
	}
	for _, a := range rep.Undecided {
		fmt.Fprintf(out, "no decision: %s (its AppProject has an invalid window)\n", a)
	}
	return nil
}

// inZone shows a time in the window's own zone, where its schedule lives,
// always with its date, then the same instant in UTC: with the UTC date
// too whenever it is not the local one ("2026-11-28 08:00 JST
// (2026-11-27 23:00Z)"), so neither reading is ambiguous.
func inZone(t *time.Time, zone string) string {
	if t == nil {
		return "never"
	}
	const day, clock = "2006-01-02", "15:04"
	u := t.UTC()
	loc, err := time.LoadLocation(zone)
	if err != nil || loc == time.UTC {
		return u.Format(day + " " + clock + "Z")
	}
	l := t.In(loc)
	utc := u.Format(clock + "Z")
	if u.Format(day) != l.Format(day) {
		utc = u.Format(day + " " + clock + "Z")
	}
	return l.Format(day+" "+clock+" MST") + " (" + utc + ")"
}

// readCluster lists Applications and AppProjects with the same typed views
// the daemon uses.
func (o *options) readCluster(ctx context.Context) (*setup.AppsDir, error) {
	rc, err := setup.RestConfig(o.kubeconfig, config.Default(), o.userAgent)
	if err != nil {
		return nil, err
	}
	dyn, err := dynamic.NewForConfig(rc)
	if err != nil {
		return nil, fmt.Errorf("building kube client: %w", err)
	}
	objs := &setup.AppsDir{}
	list, err := dyn.Resource(watcher.ApplicationsResource).Namespace(o.namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing Applications: %w", err)
	}
	for i := range list.Items {
		a, err := watcher.AppFromObject(&list.Items[i])
		if err != nil {
			return nil, err
		}
		objs.Apps = append(objs.Apps, a)
	}
	// Argo CD reads AppProjects in its own namespace only; a same-named
	// one elsewhere is nobody's project.
	projects, err := dyn.Resource(watcher.AppProjectsResource).Namespace(o.argoNS).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing AppProjects: %w", err)
	}
	for i := range projects.Items {
		objs.Projects = append(objs.Projects, watcher.ProjectFromObject(&projects.Items[i]))
	}
	slices.SortFunc(objs.Apps, func(a, b *watcher.App) int { return strings.Compare(a.Key(), b.Key()) })
	return objs, nil
}
