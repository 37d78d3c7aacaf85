package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/crowsnest-dev/crowsnest/internal/demo"
)

// The demo: an embedded registry, a Git repository and a webhook sink on
// loopback, the Applications of examples/demo read through the file source,
// and the same engine `run` uses (internal/demo). It pushes a
// newer tag mid-run, then reports what happened.

type demoOptions struct {
	output  string
	keep    bool
	timeout time.Duration
}

func newDemoCommand() *cobra.Command {
	o := &demoOptions{}
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Watch crowsnest do its whole job on a laptop: no cluster, no network",
		Long: `Demo starts an OCI registry, a Git repository and a webhook receiver on
127.0.0.1, reads the Applications of examples/demo (embedded in the binary)
through the file source and runs the same engine as "crowsnest run":

  web     kustomize, Git write-back: a commit to its kustomization.yaml
  api     Helm, Kubernetes mode: a patch of its Helm parameters
  worker  in a project whose deny sync window is open: the update is held

Notifications of crowsnest's image events go to the webhook receiver. Midway
the demo pushes a newer web image, as a CI pipeline would, and the registry
tells crowsnest. It ends with a report: what was found, committed (the diff),
patched and held, and the notifications as sent.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return o.run(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	f := cmd.Flags()
	f.StringVarP(&o.output, "output", "o", "text", "report format: text or json")
	f.BoolVar(&o.keep, "keep", false, "keep the demo's folder (Git repository, Applications, config, daemon log) and print where it is")
	f.DurationVar(&o.timeout, "timeout", 50*time.Second, "give up when the demo takes longer than this")
	return cmd
}

func (o *demoOptions) run(ctx context.Context, stdout, stderr io.Writer) error {
	if o.output != "text" && o.output != "json" {
		return fmt.Errorf("--output %q: want text or json", o.output)
	}
	start := time.Now()
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	say := func(format string, args ...any) { fmt.Fprintf(stderr, format+"\n", args...) }
	dir, err := os.MkdirTemp("", "crowsnest-demo-")
	if err != nil {
		return err
	}
	if o.keep {
		defer say("the demo's folder is kept: %s", dir)
	} else {
		defer os.RemoveAll(dir)
	}
	rep, err := demo.Run(ctx, demo.Options{Dir: dir, Out: stderr, Version: version})
	if err != nil {
		return err
	}
	rep.Seconds = time.Since(start).Round(100 * time.Millisecond).Seconds()
	if o.keep {
		rep.Folder = dir
	}
	return o.print(stdout, rep)
}

// print writes the report: -o json as is, else for people.
func (o *demoOptions) print(stdout io.Writer, rep *demo.Report) error {
	if o.output == "json" {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	}
	printDemoReport(stdout, rep)
	return nil
}

func printDemoReport(w io.Writer, rep *demo.Report) {
	fmt.Fprintf(w, "\ncrowsnest demo report (%.1fs)\n", rep.Seconds)
	section := func(title string, n int) { fmt.Fprintf(w, "\n== %s (%d)\n", title, n) }
	section("Found", len(rep.Found))
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, ev := range rep.Found {
		fmt.Fprintf(tw, "  %s\t%s\t%s\n", ev.App, ev.Reason, ev.Message)
	}
	_ = tw.Flush()
	section("Committed to Git", len(rep.Commits))
	for _, c := range rep.Commits {
		fmt.Fprintf(w, "  commit %s\n", c.SHA)
		for l := range strings.Lines(strings.TrimSpace(c.Message)) {
			fmt.Fprintf(w, "    %s", l)
		}
		fmt.Fprintf(w, "\n\n")
		for l := range strings.Lines(c.Diff) {
			fmt.Fprintf(w, "    %s", l)
		}
		fmt.Fprintln(w)
	}
	section("Patched (Kubernetes mode; in local mode an in-memory copy of the Application)", len(rep.Patched))
	for _, p := range rep.Patched {
		fmt.Fprintf(w, "  %s spec.source:\n", p.App)
		for l := range strings.Lines(p.Source) {
			fmt.Fprintf(w, "    %s", l)
		}
	}
	section("Held by a sync window", len(rep.Held))
	for _, ev := range rep.Held {
		fmt.Fprintf(w, "  %s: %s\n", ev.App, ev.Message)
	}
	section("Notifications sent to the webhook", len(rep.Notifications))
	for _, n := range rep.Notifications {
		fmt.Fprintf(w, "  %s\n", n.Body)
	}
	if len(rep.Warnings) > 0 {
		section("Warnings", len(rep.Warnings))
		for _, ev := range rep.Warnings {
			fmt.Fprintf(w, "  %s %s: %s\n", ev.App, ev.Reason, ev.Message)
		}
	}
	fmt.Fprintf(w, "\nNext: `crowsnest run --apps-dir DIR` on your own Applications, or install it in a cluster (examples/install).\n")
}
