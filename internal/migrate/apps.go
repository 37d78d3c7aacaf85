package migrate

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/crowsnest-dev/crowsnest/config"
	"github.com/crowsnest-dev/crowsnest/controller"
	"github.com/crowsnest-dev/crowsnest/controller/imageupdate"
	"github.com/crowsnest-dev/crowsnest/controller/tenancy"
	"github.com/crowsnest-dev/crowsnest/registry/policy"
	"github.com/crowsnest-dev/crowsnest/watcher"
	"github.com/crowsnest-dev/crowsnest/writeback/git/repocreds"
)

// probeTag is the tag the write-back decision is asked to write, to
// see where it would go; it never reaches the report.
const probeTag = "0.0.0-crowsnest-migrate"

// analyzeApp reports one Application as the daemon would handle it.
func (m *migration) analyzeApp(app *watcher.App) App {
	ma := App{App: app.Key(), Project: cmp.Or(app.Project, "default")}
	proj := m.Project(app)
	m.appImages(app, &ma)
	m.appNotifications(app, proj, &ma)
	m.appWindows(app, &ma)
	return ma
}

// appImages reads the Application's images as ImageReconciler.Reconcile
// does: annotations first, else a matching image policy, then the
// registries' name completion and the tenancy rules.
func (m *migration) appImages(app *watcher.App, ma *App) {
	spec, errs := imageupdate.FromAnnotations(app.Annotations)
	from, ownAnnotations := "", true
	if s, e, ref, ok := m.updaterSpec(app, ma); ok {
		// An ImageUpdater that selects the Application decides, as
		// argocd-image-updater 1.x does; policies are not asked.
		spec, errs, from, ownAnnotations = s, e, ref.where, ref.useAnnotations
		if ref.useAnnotations {
			from += " (useAnnotations: the Application's annotations)"
		}
		if spec == nil { // it decides, and leaves nothing to update
			ma.Images = &Images{From: from, Images: []Image{}}
		}
	} else if ps, name := m.policies.Match(app); ps != nil {
		if err := m.tenancy.AdmitsPolicy(app); err != nil {
			ma.Cannot = append(ma.Cannot, Finding{Where: "image policy " + name, What: "not applied: " + err.Error(), Breaks: spec == nil})
		} else if spec == nil {
			spec, from = ps, "image policy "+name
		} else {
			ma.Differs = append(ma.Differs, Finding{Where: "image policy " + name,
				What: "matches, but the Application's annotations win", Why: "annotations are the Application owner's explicit word"})
		}
	}
	if spec == nil {
		return
	}
	spec.ResolveIn(app.Namespace)
	errs = append(errs, spec.Qualify(m.regs.Qualify)...)
	errs = append(errs, m.tenancy.CheckAnnotations(app, spec)...)
	seen := map[string]bool{} // an app-wide key's problem repeats per image
	for _, err := range errs {
		if seen[err.Error()] {
			continue
		}
		seen[err.Error()] = true
		f := Finding{Where: "annotations", What: err.Error()}
		var ae *imageupdate.AnnotationError
		if errors.As(err, &ae) {
			f.Where, f.What = ae.Key, ae.Msg
		}
		if errors.Is(err, tenancy.ErrRefused) {
			f.Why = "annotations may only use their own namespace's Secrets and their AppProject's repositories (the config's tenancy section widens that)"
			f.Breaks = true
			ma.Cannot = append(ma.Cannot, f)
			continue
		}
		ma.Differs = append(ma.Differs, f)
	}
	mi := &Images{From: cmp.Or(from, spec.Source), WriteBack: string(spec.WriteBack.Method)}
	if ownAnnotations && spec.Source == imageupdate.SourceAnnotations {
		for _, dropped := range droppedImages(app.Annotations[imageUpdateListKey], spec) {
			ma.Cannot = append(ma.Cannot, Finding{Where: imageupdate.Prefix + imageupdate.KeyImageList,
				What: "image " + dropped + " would not be updated (see the problems above)", Breaks: true})
		}
	}
	if spec.WriteBack.Method == "" && len(spec.Images) > 0 {
		ma.Cannot = append(ma.Cannot, Finding{Where: "write-back", What: "nothing would be written: the write-back settings are invalid (see above)", Breaks: true})
	}
	target, err := m.writeTarget(app, spec)
	if err != nil {
		why := "Git write-back pushes only to repositories the Application's AppProject sourceRepos (or tenancy.gitRepositories) permit"
		if errors.Is(err, repocreds.ErrUnbound) {
			why = "a Secret an annotation names goes only to the repository its url names (or where tenancy.credentials sends it), so no annotation can send it to another host"
		}
		ma.Cannot = append(ma.Cannot, Finding{Where: "write-back", What: "nothing would be written: " + err.Error(), Why: why, Breaks: true})
	}
	mi.Target = target
	ma.Differs = append(ma.Differs, pullRequestHead(spec)...)
	writes, notes := imageWrites(app, spec)
	for i := range spec.Images {
		img := &spec.Images[i]
		mi.Images = append(mi.Images, Image{
			Alias: img.Alias, Image: img.Ref.Repo(), Strategy: string(policyStrategy(img)), Constraint: img.Policy.Constraint,
			AllowTags: img.Policy.AllowTags, IgnoreTags: img.Policy.IgnoreTags, Platforms: img.Policy.Platforms,
			PullSecret: img.PullSecret, Writes: writes[img.Alias], Note: notes[img.Alias],
		})
		if ref, err := config.ParseCredentialRef(img.PullSecret); err == nil {
			m.noteSecret(ref, "Application "+app.Key())
		}
	}
	ma.Images = mi
}

// pullRequestHead says how an ImageUpdater's pull requests differ from
// argocd-image-updater's: their head branch.
func pullRequestHead(spec *imageupdate.Spec) []Finding {
	if pr := spec.WriteBack.PullRequest; pr == nil || !pr.ImageUpdaterHead || spec.WriteBack.Method != imageupdate.MethodGit {
		return nil
	}
	return []Finding{{Where: "write-back",
		What: "pull requests come from one head branch per repository, base branch, AppProject and credentials (image-updater-<8 hex digits>), kept current as newer tags arrive; " +
			"those argocd-image-updater left open (image-updater-<target>-<sha256>, one per set of changes) are neither updated nor closed",
		Why: "one open pull request per target rather than one per set of new tags; close argocd-image-updater's after the cut-over"}}
}

// policyStrategy is the strategy the image's policy compiles to.
func policyStrategy(img *imageupdate.Image) policy.Strategy {
	p, err := policy.Compile(img.Ref.Repo(), img.Policy)
	if err != nil {
		return policy.Strategy(img.Policy.Strategy)
	}
	return p.Strategy()
}

// droppedImages names the image-list entries the spec lost to problems.
func droppedImages(list string, spec *imageupdate.Spec) []string {
	var out []string
	for entry := range strings.SplitSeq(list, ",") {
		entry = strings.TrimSpace(entry)
		if entry == "" {
			continue
		}
		alias, ref, hasAlias := strings.Cut(entry, "=")
		if !hasAlias {
			ref, alias = entry, ""
		}
		name := strings.TrimSpace(ref)
		if i := strings.LastIndexByte(name, '/'); strings.Contains(name[i+1:], ":") {
			name = name[:i+1+strings.IndexByte(name[i+1:], ':')]
		}
		alias = cmp.Or(strings.TrimSpace(alias), name)
		if !slices.ContainsFunc(spec.Images, func(img imageupdate.Image) bool { return img.Alias == alias }) {
			out = append(out, alias)
		}
	}
	return out
}

// imageWrites asks the daemon's decision where a new tag of each image
// would be written (forcing images not deployed yet, which it would skip
// until they are), and which images it would skip now.
func imageWrites(app *watcher.App, spec *imageupdate.Spec) (writes, notes map[string]string) {
	writes, notes = map[string]string{}, map[string]string{}
	if spec.WriteBack.Method == "" {
		return writes, notes
	}
	results := map[string]imageupdate.Selection{}
	forced := *spec
	forced.Images = slices.Clone(spec.Images)
	for i := range forced.Images {
		forced.Images[i].ForceUpdate = true
		results[forced.Images[i].Alias] = imageupdate.Selection{Result: policy.Result{Tag: probeTag}}
	}
	for _, s := range imageupdate.Decide(app, spec, results, imageupdate.Hold{}).Skipped {
		if s.Reason == imageupdate.ReasonNotDeployed || s.Reason == imageupdate.ReasonNoSource {
			notes[s.Alias] = s.Detail
		}
	}
	plan := imageupdate.Decide(app, &forced, results, imageupdate.Hold{})
	for i := range plan.Changes {
		ch := &plan.Changes[i]
		var w string
		switch {
		case len(ch.Helm) > 0:
			names := make([]string, len(ch.Helm))
			for i, p := range ch.Helm {
				names[i] = p.Name
			}
			w = "Helm parameters " + strings.Join(names, ", ")
		default:
			w = "kustomize image " + ch.KustomizeName
		}
		if app.MultiSource {
			w += fmt.Sprintf(" (spec.sources[%d])", ch.SourceIndex)
		}
		writes[ch.Alias] = w
	}
	return writes, notes
}

// writeTarget describes where the write-back goes, and checks a Git
// repository against the tenancy rules as the daemon does before a push
// (a refusal leaves the spec with nothing to write).
func (m *migration) writeTarget(app *watcher.App, spec *imageupdate.Spec) (string, error) {
	wb := &spec.WriteBack
	switch wb.Method {
	case imageupdate.MethodArgoCD:
		return "the Application's spec (a patch of its parameter overrides)", nil
	case imageupdate.MethodGit:
	default:
		return "", nil
	}
	repo := wb.Repository
	if repo == "" && len(app.Sources) > 0 {
		repo = app.Sources[0].RepoURL
	}
	file := ".argocd-source-" + app.Name + ".yaml"
	switch wb.Target.Kind {
	case imageupdate.TargetKustomization:
		file = "kustomization " + cmp.Or(wb.Target.Path, "(the source path)")
	case imageupdate.TargetHelmValues:
		file = "Helm values " + cmp.Or(wb.Target.Path, "values.yaml")
	}
	branch := "on " + cmp.Or(wb.Branch, "the targetRevision")
	if wb.PushBranch != "" {
		branch += ", pushed to " + wb.PushBranch
	}
	if wb.PullRequest != nil {
		branch = pullRequestText(wb.PullRequest, cmp.Or(wb.Branch, "the targetRevision"))
	}
	creds := "Argo CD's repository credentials"
	if s, ok := strings.CutPrefix(wb.GitCredentials, "secret:"); ok {
		creds = "Secret " + s
		ns, name, _ := strings.Cut(s, "/")
		m.noteSecret(config.CredentialRef{Source: config.CredsSecret, Namespace: ns, Name: name}, "Application "+app.Key())
		if spec.Source == imageupdate.SourceAnnotations {
			if err := m.gitSecretBound(s, repo); err != nil {
				wb.Method = ""
				return out(repo, file, branch, creds), err
			}
		}
	}
	if spec.Source == imageupdate.SourceAnnotations || wb.Repository == "" {
		if err := m.tenancy.CheckRepository(app, repo); err != nil {
			wb.Method = ""
			return out(repo, file, branch, creds), err
		}
	}
	return out(repo, file, branch, creds), nil
}

// out says a Git write-back: where is "on <branch>" or how a pull
// request proposes it.
func out(repo, file, where, creds string) string {
	return fmt.Sprintf("git %s, %s %s, with %s", repo, file, where, creds)
}

// pullRequestText says how a pull request proposes a commit into base: the
// forge the settings name, and what reviewers see besides the commit.
func pullRequestText(pr *imageupdate.PullRequest, base string) string {
	s := "in a pull request into " + base
	var how []string
	if pr.Forge != "" {
		how = append(how, pr.Forge)
	}
	for _, l := range []struct {
		name  string
		names []string
	}{{"labels", pr.Labels}, {"reviewers", pr.Reviewers}, {"assignees", pr.Assignees}} {
		if len(l.names) > 0 {
			how = append(how, l.name+" "+strings.Join(l.names, ", "))
		}
	}
	if pr.Draft {
		how = append(how, "draft")
	}
	if pr.AutoMerge {
		how = append(how, "auto-merge")
	}
	if len(how) > 0 {
		s += " (" + strings.Join(how, "; ") + ")"
	}
	return s
}

// gitSecretBound checks a Secret an annotation (or ImageUpdater) names
// for Git write-back as the daemon does before a push: the operator
// sends it there (tenancy.credentials), or its own url names the
// repository. A Secret migrate did not read is said to be checked at run
// time.
func (m *migration) gitSecretBound(nsName, repo string) error {
	if m.tenancy.GitSecretBound(nsName, repo) {
		return nil
	}
	data, ok := m.in.Secrets[nsName]
	if !ok {
		return nil
	}
	if err := repocreds.CheckURL(string(data["url"]), repo); err != nil {
		return fmt.Errorf("named Secret %s: %w", nsName, err)
	}
	return nil
}

// appWindows lists the sync windows that match the Application.
func (m *migration) appWindows(app *watcher.App, ma *App) {
	if err, broken := m.brokenProjects[ma.Project]; broken {
		ma.Cannot = append(ma.Cannot, Finding{Where: "AppProject " + ma.Project + " syncWindows",
			What: "do not compile, so image write-backs are held until they are fixed: " + err.Error(),
			Why:  "Argo CD refuses the project's syncs too; crowsnest does not act on a partial set", Breaks: ma.Images != nil})
	}
	for _, w := range m.windows.Matching(controller.WindowRef(app)) {
		sp := w.Spec()
		ma.Windows = append(ma.Windows, Window{Name: w.Name(), Kind: string(w.Kind()), Schedule: sp.Schedule,
			Duration: w.Duration().String(), TimeZone: w.Location().String(), HoldsImages: w.HoldsImageUpdates()})
		if w.HoldsImageUpdates() && ma.Images != nil {
			ma.Differs = append(ma.Differs, Finding{Where: "sync window " + w.Name(),
				What: "image write-backs are held while it keeps syncs from running (an active deny window, or outside every allow window), and written after",
				Why:  "argocd-image-updater writes regardless of windows; Argo CD only stops the sync"})
		}
	}
}

// windowFindings adds the installation-wide sync window findings.
func (m *migration) windowFindings() {
	for _, name := range slices.Sorted(maps.Keys(m.brokenProjects)) {
		m.cannot(Finding{Where: "AppProject " + name + " syncWindows", What: "do not compile: " + m.brokenProjects[name].Error(),
			Why: "its Applications' image write-backs are held until fixed"})
	}
}

// summarize counts and collects what would stop working.
func (m *migration) summarize() {
	s := &m.rep.Summary
	s.Applications = len(m.rep.Applications)
	s.Breaks = []string{}
	add := func(prefix string, fs []Finding) {
		for _, f := range fs {
			if f.Breaks {
				s.Breaks = append(s.Breaks, prefix+f.Where+": "+f.What)
			}
		}
	}
	for i := range m.rep.Applications {
		a := &m.rep.Applications[i]
		if a.Images != nil && len(a.Images.Images) > 0 {
			s.ImagesManaged++
		}
		for _, sub := range a.Notifications {
			if sub.Status == StatusDelivers {
				s.Subscriptions++
			}
		}
		s.ReadDiffer += len(a.Differs)
		s.CannotDo += len(a.Cannot)
		add("Application "+a.App+" ", a.Cannot)
	}
	s.ReadDiffer += len(m.rep.Differs)
	s.CannotDo += len(m.rep.Cannot)
	add("", m.rep.Cannot)
	if len(s.Breaks) > 0 {
		s.ExitCode = 1
	}
}
