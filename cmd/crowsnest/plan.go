package main

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/crowsnest-dev/crowsnest/controller/dryrun"
	"github.com/crowsnest-dev/crowsnest/controller/imageupdate"
)

// Plan formats of `run --dry-run` (--plan-format).
const (
	planFormatText = "text"
	planFormatJSON = "json"
)

// planPrinter prints the write-back plans of `run --dry-run` to out, one
// block (text) or one line (JSON) per Application. A daemon prints each
// Application's plan when it is first made and again only when it
// changes; with --once (hold) the plans are kept and Flush prints them
// at the end of the pass, sorted by Application, so the same folder and
// registry give the same output.
type planPrinter struct {
	out    io.Writer
	format string
	hold   bool

	mu      sync.Mutex
	printed map[string]string // app key -> its plan as last printed or held
}

var _ dryrun.Recorder = (*planPrinter)(nil)

// newPlanPrinter checks format and returns the printer.
func newPlanPrinter(out io.Writer, format string, hold bool) (*planPrinter, error) {
	if format != planFormatText && format != planFormatJSON {
		return nil, fmt.Errorf("--plan-format %q: want %s or %s", format, planFormatText, planFormatJSON)
	}
	return &planPrinter{out: out, format: format, hold: hold, printed: map[string]string{}}, nil
}

// RecordPlan implements dryrun.Recorder.
func (p *planPrinter) RecordPlan(wp imageupdate.WritePlan) {
	s := p.render(&wp)
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.printed[wp.App] == s {
		return
	}
	p.printed[wp.App] = s
	if !p.hold {
		_, _ = io.WriteString(p.out, s)
	}
}

// Flush prints the plans held, sorted by Application, and returns how
// many there were.
func (p *planPrinter) Flush() int {
	if p == nil {
		return 0
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	keys := slices.Sorted(maps.Keys(p.printed))
	if p.hold {
		for _, k := range keys {
			_, _ = io.WriteString(p.out, p.printed[k])
		}
	}
	return len(keys)
}

func (p *planPrinter) render(wp *imageupdate.WritePlan) string {
	if p.format == planFormatJSON {
		// One line per plan, the patch and diffs as they are (no HTML
		// escaping).
		var b strings.Builder
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(wp); err != nil { // only strings and valid JSON patches are in a plan
			return fmt.Sprintf("{\"app\":%q,\"error\":%q}\n", wp.App, err.Error())
		}
		return b.String()
	}
	return planText(wp)
}

// planText is a plan for people: a header of "# " lines naming the
// Application, method, images and target, then what would be sent as it
// would be sent (Git's unified diff, which git apply takes with the
// header lines around it; or the JSON patch), then a blank line.
func planText(wp *imageupdate.WritePlan) string {
	var b strings.Builder
	line := func(format string, args ...any) {
		b.WriteString(strings.TrimRight(fmt.Sprintf("# "+format, args...), " "))
		b.WriteByte('\n')
	}
	line("%s: %s write-back", wp.App, wp.Method)
	for _, c := range wp.Changes {
		line("  image %s: %s -> %s", c.Image, cmp.Or(c.From, "(not deployed)"), c.To)
	}
	if wp.HeldBy != "" {
		line("  held by %s: nothing would be written now", wp.HeldBy)
	}
	for i := range wp.Git {
		g := &wp.Git[i]
		line("  repository %s", g.Repository)
		if g.Error != "" {
			line("  branch %s: not planned: %s", g.Branch, strings.ReplaceAll(g.Error, "\n", "; "))
			continue
		}
		switch {
		case g.NewBranch:
			line("  branch %s (new, from %s at %s)", g.Branch, g.BaseBranch, g.BaseCommit)
		case g.Branch != g.BaseBranch:
			line("  branch %s (at %s; base branch %s)", g.Branch, g.BaseCommit, g.BaseBranch)
		default:
			line("  branch %s (at %s)", g.Branch, g.BaseCommit)
		}
		if len(g.Files) == 0 {
			line("  nothing to commit: the files already hold these values")
			continue
		}
		line("  commit message:")
		for l := range strings.Lines(strings.TrimRight(g.CommitMessage, "\n")) {
			line("    %s", strings.TrimRight(l, "\n"))
		}
		if pr := g.PullRequest; pr != nil {
			pullRequestText(line, pr)
		}
		for _, f := range g.Files {
			b.WriteString(f.Diff)
		}
	}
	if k := wp.Kubernetes; k != nil {
		line("  object %s %s %s/%s (resourceVersion %s)", k.APIVersion, k.Kind, k.Namespace, k.Name, k.ResourceVersion)
		if string(k.Patch) == "null" {
			line("  nothing to patch: the Application already holds these values")
		} else {
			line("  patch (%s):", k.PatchType)
			b.Write(k.Patch)
			b.WriteByte('\n')
		}
	}
	for i, l := range strings.Split(wp.Error, "\n") {
		if i == 0 && l != "" {
			line("  error: %s", l)
		} else if l != "" {
			line("    %s", l)
		}
	}
	b.WriteByte('\n')
	return b.String()
}

// pullRequestText writes the pull request a plan would open or update, and
// each request it would send the forge.
func pullRequestText(line func(format string, args ...any), pr *imageupdate.PlannedPullRequest) {
	if pr.Action == "update" {
		line("  pull request #%d (%s) would be updated: %s into %s on %s", pr.Number, pr.URL, pr.Head, pr.Base, pr.Repository)
	} else {
		line("  pull request would be opened: %s into %s on %s", pr.Head, pr.Base, pr.Repository)
	}
	line("    title: %s", pr.Title)
	for l := range strings.Lines(pr.Body) {
		line("    | %s", strings.TrimRight(l, "\n"))
	}
	for _, f := range []struct {
		name  string
		names []string
	}{{"labels", pr.Labels}, {"reviewers", pr.Reviewers}, {"assignees", pr.Assignees}} {
		if len(f.names) > 0 {
			line("    %s: %s", f.name, strings.Join(f.names, ", "))
		}
	}
	if pr.Draft || pr.AutoMerge {
		line("    draft: %t, auto-merge: %t", pr.Draft, pr.AutoMerge)
	}
	for _, r := range pr.Requests {
		line("    %s %s", r.Method, r.URL)
		for _, k := range slices.Sorted(maps.Keys(r.Header)) {
			line("      %s: %s", k, strings.Join(r.Header[k], ", "))
		}
		for l := range strings.Lines(r.Body) {
			line("      %s", strings.TrimRight(l, "\n"))
		}
	}
	if pr.Note != "" {
		line("    (%s)", pr.Note)
	}
}
