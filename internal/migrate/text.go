package migrate

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// WriteText writes the report for people: per Application what
// crowsnest manages, then what it reads differently and cannot do, the
// summary, and the install. "!" marks what would stop working.
func WriteText(w io.Writer, rep *Report) error {
	p := &textPrinter{w: w}
	p.f("crowsnest migrate: %s, Argo CD namespace %s\n", rep.Source, rep.ArgoCDNamespace)
	p.f("\nRead\n")
	for _, r := range rep.Read {
		p.f("  %s\n", r)
	}
	p.f("\nApplications\n")
	if len(rep.Applications) == 0 {
		p.f("  none\n")
	}
	for i := range rep.Applications {
		p.app(&rep.Applications[i])
	}
	if len(rep.Updaters) > 0 {
		p.f("\nImageUpdaters\n")
		for _, u := range rep.Updaters {
			switch {
			case !u.Analysed:
				p.f("  %s: unreadable (see below)\n", u.Name)
			case len(u.Apps) == 0:
				p.f("  %s: read by crowsnest; decides for no Application\n", u.Name)
			default:
				p.f("  %s: read by crowsnest; decides for %s\n", u.Name, strings.Join(u.Apps, ", "))
			}
		}
	}
	p.f("\nRead differently\n")
	p.findings(rep.Differs, "  ")
	p.f("\nCannot do\n")
	p.findings(rep.Cannot, "  ")
	s := &rep.Summary
	p.f("\nSummary\n")
	p.f("  %d Applications, %d with images crowsnest updates, %d subscriptions delivering\n", s.Applications, s.ImagesManaged, s.Subscriptions)
	p.f("  %d read differently, %d cannot do\n", s.ReadDiffer, s.CannotDo)
	if len(s.Breaks) == 0 {
		p.f("  everything keeps working (exit code 0)\n")
	} else {
		p.f("  would stop working (exit code %d):\n", s.ExitCode)
		for _, b := range s.Breaks {
			p.f("    ! %s\n", b)
		}
	}
	p.f("\nInstall\n")
	for _, c := range rep.Install.Commands {
		p.f("%s\n", c)
	}
	p.f("\nRBAC of crowsnest's ServiceAccount (%s/%s)\n", installNamespace, helmRelease)
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  WHERE\tRESOURCES\tVERBS\tGRANTED BY\tWHY")
	for _, r := range rep.Install.RBAC {
		by := "the chart"
		if !r.Chart {
			by = "kubectl apply above"
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\n", r.Where, r.Resources, r.Verbs, by, r.Why)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	return p.err
}

// textPrinter writes and keeps the first error.
type textPrinter struct {
	w   io.Writer
	err error
}

func (p *textPrinter) f(format string, args ...any) {
	if p.err == nil {
		_, p.err = fmt.Fprintf(p.w, format, args...)
	}
}

func (p *textPrinter) findings(fs []Finding, indent string) {
	if len(fs) == 0 {
		p.f("%snothing\n", indent)
	}
	for _, f := range fs {
		mark := "-"
		if f.Breaks {
			mark = "!"
		}
		p.f("%s%s %s: %s\n", indent, mark, f.Where, f.What)
		if f.Why != "" {
			p.f("%s    why: %s\n", indent, f.Why)
		}
	}
}

func (p *textPrinter) app(a *App) {
	p.f("\n  %s (project %s)\n", a.App, a.Project)
	if im := a.Images; im == nil {
		p.f("    images: none (no argocd-image-updater annotations, no matching image policy)\n")
	} else {
		wb := im.WriteBack
		if wb == "" {
			wb = "none (see below)"
		}
		p.f("    images from %s, write-back %s\n", im.From, wb)
		if im.Target != "" {
			p.f("      target: %s\n", im.Target)
		}
		for i := range im.Images {
			img := &im.Images[i]
			pol := img.Strategy
			if img.Constraint != "" {
				pol += " " + img.Constraint
			}
			p.f("      %s: %s, %s", img.Alias, img.Image, pol)
			if img.Writes != "" {
				p.f(" -> %s", img.Writes)
			}
			p.f("\n")
			if img.AllowTags != "" {
				p.f("        allow-tags %s\n", img.AllowTags)
			}
			if len(img.IgnoreTags) > 0 {
				p.f("        ignore-tags %s\n", strings.Join(img.IgnoreTags, ", "))
			}
			if len(img.Platforms) > 0 {
				p.f("        platforms %s\n", strings.Join(img.Platforms, ", "))
			}
			if img.PullSecret != "" {
				p.f("        pull secret %s\n", img.PullSecret)
			}
			if img.Note != "" {
				p.f("        now: %s\n", img.Note)
			}
		}
	}
	if len(a.Notifications) > 0 {
		p.f("    notifications\n")
		for _, s := range a.Notifications {
			dest := s.Service
			if s.Recipient != "" {
				dest += ":" + s.Recipient
			}
			p.f("      %s -> %s: %s\n", s.Trigger, dest, s.Status)
			for _, n := range s.Notes {
				p.f("        %s\n", n)
			}
		}
	}
	if len(a.Windows) > 0 {
		p.f("    sync windows\n")
		for _, w := range a.Windows {
			holds := ""
			if w.HoldsImages {
				holds = ", holds image write-backs"
			}
			p.f("      %s: %s %q for %s (%s)%s\n", w.Name, w.Kind, w.Schedule, w.Duration, w.TimeZone, holds)
		}
	}
	if len(a.Differs) > 0 {
		p.f("    reads differently\n")
		p.findings(a.Differs, "      ")
	}
	if len(a.Cannot) > 0 {
		p.f("    cannot do\n")
		p.findings(a.Cannot, "      ")
	}
}
