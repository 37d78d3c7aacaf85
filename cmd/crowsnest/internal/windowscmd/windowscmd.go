package windowscmd

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/crowsnest-dev/crowsnest/internal/windowsreport"
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

// Report is the command's -o json output (windowsreport's).
type Report = windowsreport.Report

// AppDecision is one Application's window decision in Report.
type AppDecision = windowsreport.AppDecision

func (o *options) run(ctx context.Context, out io.Writer) error {
	now, err := o.check()
	if err != nil {
		return err
	}
	rep, err := windowsreport.Build(ctx, windowsreport.Options{
		ConfigPath: o.configPath, AppsDir: o.appsDir, Cluster: o.cluster, Kubeconfig: o.kubeconfig,
		Namespace: o.namespace, ArgoCDNamespace: o.argoNS, UserAgent: o.userAgent, App: o.app, At: now,
	})
	if err != nil {
		return err
	}
	if o.output == "json" {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		err = enc.Encode(rep)
	} else {
		err = printWindows(out, rep)
	}
	if err != nil {
		return err
	}
	return rep.Err()
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

func printWindows(out io.Writer, rep *windowsreport.Report) error {
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
