package controller

import (
	"cmp"
	"fmt"
	"strings"

	"github.com/crowsnest-dev/crowsnest/controller/imageupdate"
	"github.com/crowsnest-dev/crowsnest/watcher"
	gitwb "github.com/crowsnest-dev/crowsnest/writeback/git"
	"github.com/crowsnest-dev/crowsnest/writeback/git/branchtmpl"
)

// gitChanges turns a plan into the Git writer's changes for app: one per
// source written (a multi-source Application's images may live in
// different sources). A helmvalues target path that starts with $<ref>/
// names the file in the source with that ref, as Argo CD's valueFiles do:
// the values repository of a chart from a Helm repository.
func gitChanges(app *watcher.App, spec *imageupdate.Spec, changes []imageupdate.Change) ([]gitwb.Change, error) {
	var order []int
	groups := map[int][]imageupdate.Change{}
	for i := range changes {
		idx := changes[i].SourceIndex
		if _, ok := groups[idx]; !ok {
			order = append(order, idx)
		}
		groups[idx] = append(groups[idx], changes[i])
	}
	out := make([]gitwb.Change, 0, len(order))
	for _, idx := range order {
		ch, err := gitChange(app, spec, idx, groups[idx])
		if err != nil {
			return nil, err
		}
		out = append(out, ch)
	}
	return out, nil
}

// gitChange is the Git writer's change for the images of one source.
func gitChange(app *watcher.App, spec *imageupdate.Spec, idx int, changes []imageupdate.Change) (gitwb.Change, error) {
	var src *watcher.Source
	switch {
	case idx >= 0 && idx < len(app.Sources):
		src = &app.Sources[idx]
	case idx < 0 && len(app.Sources) > 0:
		src = &app.Sources[0]
	default:
		return gitwb.Change{}, fmt.Errorf("git write-back: the Application has no source to write to")
	}
	ch := gitwb.Change{App: app.Name, RepoURL: src.RepoURL, Path: src.Path, SourceType: gitwb.SourceKustomize,
		Project: cmp.Or(app.Project, "default")}
	branchOf := src
	switch spec.WriteBack.Target.Kind {
	case imageupdate.TargetKustomization:
		ch.Target = gitwb.Target{Kind: gitwb.TargetKustomization, Path: spec.WriteBack.Target.Path}
	case imageupdate.TargetHelmValues:
		ch.Target = gitwb.Target{Kind: gitwb.TargetHelmValues, Path: spec.WriteBack.Target.Path}
		if p, ok := strings.CutPrefix(spec.WriteBack.Target.Path, "$"); ok {
			ref, rest, _ := strings.Cut(p, "/")
			refSrc := refSource(app, ref)
			switch {
			case refSrc == nil:
				return gitwb.Change{}, fmt.Errorf("git write-back: write-back-target helmvalues:%s: no source has ref %q", spec.WriteBack.Target.Path, ref)
			case rest == "":
				return gitwb.Change{}, fmt.Errorf("git write-back: write-back-target helmvalues:%s: want $%s/<path to the values file>", spec.WriteBack.Target.Path, ref)
			}
			ch.RepoURL, ch.Path, ch.Target.Path, branchOf = refSrc.RepoURL, "", "/"+rest, refSrc
		}
	default:
		ch.Target = gitwb.Target{Kind: gitwb.TargetArgoCDSource}
	}
	if spec.WriteBack.Repository != "" {
		ch.RepoURL = spec.WriteBack.Repository
	} else if branchOf.Chart != "" {
		return gitwb.Change{}, fmt.Errorf("git write-back: source %s is chart %q from a Helm repository, not Git; "+
			"name the values file with write-back-target helmvalues:$<ref>/<path> or set git-repository", branchOf.RepoURL, branchOf.Chart)
	}
	branch, err := gitBranch(app, spec, branchOf)
	if err != nil {
		return gitwb.Change{}, err
	}
	ch.Branch = branch
	for i := range changes {
		c := &changes[i]
		if len(c.Helm) > 0 {
			ch.SourceType = gitwb.SourceHelm
		}
		img := gitwb.Image{Alias: c.Alias, Name: c.Image, NewTag: c.To, Digest: c.Digest}
		if c.KustomizeName != "" && c.KustomizeName != c.Image {
			// "" and the image itself mean the same: no name= prefix.
			// Another kustomize name is rewritten to the image itself
			// (newName), as argocd-image-updater writes it, or the name
			// would resolve to another registry.
			img.KustomizeName, img.NewName = c.KustomizeName, c.Image
		}
		if c.Digest != "" {
			img.NewTag, _, _ = strings.Cut(c.To, "@")
		}
		for j := range spec.Images {
			if si := &spec.Images[j]; si.Alias == c.Alias {
				img.HelmImageName, img.HelmImageTag, img.HelmImageSpec = si.Helm.ImageName, si.Helm.ImageTag, si.Helm.ImageSpec
			}
		}
		ch.Images = append(ch.Images, img)
	}
	ch.Scope = renderScope(app, ch.RepoURL, ch.Path, branchOf == src)
	return ch, nil
}

// gitBranch is the write-back branch of a change to src: the git-branch
// annotation's (checked when read), or else src's targetRevision, which
// must be a branch Git could push to (a Helm chart's "1.*" or a
// "v1 rc" is not): checked here, before the change joins a batch with
// other Applications', with the writer's own rules.
func gitBranch(app *watcher.App, spec *imageupdate.Spec, src *watcher.Source) (string, error) {
	branch := spec.WriteBack.Branch
	if rev := src.TargetRevision; branch == "" && rev != "" && rev != branchtmpl.DefaultBranch {
		if err := branchtmpl.CheckName(rev); err != nil {
			return "", fmt.Errorf("git write-back: %s: %w; name the branch to write to with the git-branch annotation", revisionField(app, src), err)
		}
		branch = rev
	}
	if spec.WriteBack.PushBranch != "" {
		// ":target" commits on top of the revision, HEAD without one.
		branch = cmp.Or(branch, branchtmpl.DefaultBranch) + ":" + spec.WriteBack.PushBranch
	}
	return branch, nil
}

// revisionField is the field path of src's targetRevision in app.
func revisionField(app *watcher.App, src *watcher.Source) string {
	for i := range app.Sources {
		if &app.Sources[i] == src && app.MultiSource {
			return fmt.Sprintf("spec.sources[%d].targetRevision", i)
		}
	}
	return "spec.source.targetRevision"
}

// refSource is the source with ref name, or nil.
func refSource(app *watcher.App, name string) *watcher.Source {
	for i := range app.Sources {
		if app.Sources[i].Ref == name {
			return &app.Sources[i]
		}
	}
	return nil
}
