package imageupdate

import (
	"errors"
	"strings"

	"github.com/crowsnest-dev/crowsnest/registry/policy"
	"github.com/crowsnest-dev/crowsnest/watcher"
)

// Reason says why an image is not changed; tests and Events use these.
type Reason string

// Reasons an image is left alone.
const (
	ReasonUpToDate        Reason = "UpToDate"
	ReasonNotDeployed     Reason = "NotDeployed"
	ReasonSelectionFailed Reason = "SelectionFailed"
	// ReasonNoCandidate is a tag list in which no tag passes the policy
	// (constraint, filters, platforms): nothing to do, as for
	// argocd-image-updater, not a failure.
	ReasonNoCandidate Reason = "NoCandidate"
	ReasonNoResult    Reason = "NoSelection"
	ReasonNoWriteBack Reason = "InvalidWriteBack"
	ReasonNoSource    Reason = "NoSource"
	// ReasonUnsupportedSource: Argo CD renders the source as a plain
	// directory, which takes neither Helm parameters nor Kustomize
	// images.
	ReasonUnsupportedSource Reason = "UnsupportedSource"
)

// Selection is the outcome of version selection for one image.
type Selection struct {
	Result policy.Result
	Err    error
}

// Hold is the window state for an Application's write-backs.
type Hold struct {
	Held   bool
	Reason string
}

// Change is one image to write: what runs now and what it becomes.
type Change struct {
	Alias string
	// Image is the image as written in the spec ("nginx").
	Image string
	// From is the current tag (or tag@digest); empty when the image is
	// not deployed yet and force-update asked for it.
	From string
	// To is the new tag, tag@digest for pinned results.
	To string
	// Digest is set for pinned (digest strategy) results.
	Digest string
	// SourceIndex is the index in spec.sources of a multi-source
	// Application, -1 for spec.source.
	SourceIndex int
	// Kustomize, when set, is the kustomize images entry to write
	// ("name=newName:tag" form when the kustomize name differs).
	Kustomize string
	// KustomizeName is the image name the entry replaces.
	KustomizeName string
	// Helm are the Helm parameters to set, in order.
	Helm []watcher.HelmParameter
	// Revision and Source are the new image's source revision and
	// repository, as selection read them from the registry (policy.Result);
	// Described says it read them (Result.Digest is set), so that "" means
	// the image does not say and nobody need ask again. Pull request
	// bodies show them.
	Revision, Source string
	Described        bool
}

// Skip is an image left alone, with why.
type Skip struct {
	Alias  string
	Reason Reason
	Detail string
}

// Plan is what to do for one Application.
type Plan struct {
	Changes []Change
	Skipped []Skip
	// Held is true when a window holds write-backs now; Changes are then
	// pending, to be written when it lifts.
	Held       bool
	HoldReason string
}

// Decide turns an Application, its spec, the selection results (by alias)
// and the window state into a plan. It is a pure function: nothing is
// written when every image is up to date.
func Decide(app *watcher.App, spec *Spec, results map[string]Selection, hold Hold) Plan {
	var p Plan
	if spec.WriteBack.Method == "" {
		for i := range spec.Images {
			p.Skipped = append(p.Skipped, Skip{Alias: spec.Images[i].Alias, Reason: ReasonNoWriteBack, Detail: "the write-back annotations are invalid"})
		}
		return p
	}
	for i := range spec.Images {
		img := &spec.Images[i]
		sel, ok := results[img.Alias]
		switch {
		case !ok:
			p.Skipped = append(p.Skipped, Skip{Alias: img.Alias, Reason: ReasonNoResult})
			continue
		case errors.Is(sel.Err, policy.ErrNoCandidate):
			p.Skipped = append(p.Skipped, Skip{Alias: img.Alias, Reason: ReasonNoCandidate, Detail: sel.Err.Error()})
			continue
		case sel.Err != nil:
			p.Skipped = append(p.Skipped, Skip{Alias: img.Alias, Reason: ReasonSelectionFailed, Detail: sel.Err.Error()})
			continue
		}
		ch, skip := decideImage(app, spec, img, sel.Result)
		if skip != nil {
			p.Skipped = append(p.Skipped, *skip)
			continue
		}
		p.Changes = append(p.Changes, ch)
	}
	if len(p.Changes) > 0 && hold.Held {
		p.Held, p.HoldReason = true, hold.Reason
	}
	return p
}

func decideImage(app *watcher.App, spec *Spec, img *Image, res policy.Result) (Change, *Skip) {
	to := res.Tag
	if res.Pinned {
		to = res.Ref()
	}
	idx, src := targetSource(app, img)
	if src == nil && len(app.Sources) > 0 {
		return Change{}, &Skip{Alias: img.Alias, Reason: ReasonNoSource, Detail: "no source of the Application takes image overrides"}
	}
	if renderedAs(app, idx) == "Directory" && spec.WriteBack.Target.Kind != TargetKustomization {
		return Change{}, &Skip{Alias: img.Alias, Reason: ReasonUnsupportedSource, Detail: "Argo CD renders the source as Directory, " +
			"which takes neither Helm parameters nor Kustomize images (either would have Argo CD render it with that tool, " +
			"and fail); argocd-image-updater skips it too. A write-back-target of kustomization:<path> edits a kustomization in Git instead"}
	}
	ch := Change{Alias: img.Alias, Image: img.Name, To: to, SourceIndex: idx,
		Revision: res.Revision, Source: res.Source, Described: res.Digest != ""}
	if res.Pinned {
		// The digest strategy, or a write-back that pins digests
		// (WriteBack.PinDigest): deployed by digest.
		ch.Digest = res.Digest
	}
	current, deployed, renamed := currentVersion(app, spec, img, src)
	if !deployed && !img.ForceUpdate {
		return Change{}, &Skip{Alias: img.Alias, Reason: ReasonNotDeployed,
			Detail: "the image is neither in status.summary.images nor set in the spec (force-update not set)"}
	}
	if current == to && !renamed {
		return Change{}, &Skip{Alias: img.Alias, Reason: ReasonUpToDate, Detail: to}
	}
	ch.From = current
	if isHelm(app, spec, img, idx, src) {
		ch.Helm = helmParams(img, to)
	} else {
		ch.KustomizeName = kustomizeName(img)
		ch.Kustomize = img.Name + ":" + to
		if ch.KustomizeName != img.Name {
			ch.Kustomize = ch.KustomizeName + "=" + ch.Kustomize
		}
	}
	return ch, nil
}

// targetSource picks the source that receives the overrides: spec.source,
// or in a multi-source Application the first Helm source for Helm images
// and the first other source with a path for kustomize ones (sources that
// only provide $values refs are never written).
func targetSource(app *watcher.App, img *Image) (int, *watcher.Source) {
	if !app.MultiSource {
		if len(app.Sources) == 0 {
			return -1, nil
		}
		return -1, &app.Sources[0]
	}
	wantHelm := img.Helm != (HelmNames{})
	for i := range app.Sources {
		s := &app.Sources[i]
		helm := s.Chart != "" || s.Helm != nil
		switch {
		case wantHelm && helm:
			return i, s
		case !wantHelm && s.Kustomize != nil:
			return i, s
		}
	}
	for i := range app.Sources {
		s := &app.Sources[i]
		if s.Ref == "" || s.Path != "" || s.Chart != "" {
			return i, s
		}
	}
	return -1, nil
}

// isHelm says whether the image's overrides are Helm parameters: the
// annotations' choice (helm names, a kustomize name, the kustomization
// target), then the source's helm or kustomize block, then the tool Argo CD
// found rendering the source (status.sourceType or sourceTypes), as
// argocd-image-updater decides. A chart in a Git folder often has no helm
// block; kustomize overrides on it make Argo CD run kustomize on the chart,
// which fails.
func isHelm(app *watcher.App, spec *Spec, img *Image, idx int, src *watcher.Source) bool {
	switch {
	case img.Helm != (HelmNames{}):
		return true
	case img.KustomizeName != "", spec.WriteBack.Target.Kind == TargetKustomization:
		return false
	case src == nil:
		return false
	case src.Kustomize != nil:
		return false
	case src.Chart != "" || src.Helm != nil:
		return true
	}
	return renderedAs(app, idx) == "Helm"
}

// renderedAs is the tool Argo CD found rendering the source at idx (-1:
// spec.source): status.sourceType or status.sourceTypes; "" before Argo
// CD looked.
func renderedAs(app *watcher.App, idx int) string {
	switch {
	case idx < 0:
		return app.SourceType
	case idx < len(app.SourceTypes):
		return app.SourceTypes[idx]
	}
	return ""
}

// Helm parameter names argocd-image-updater uses when none are given.
const (
	defaultHelmImageName = "image.name"
	defaultHelmImageTag  = "image.tag"
)

func helmParams(img *Image, to string) []watcher.HelmParameter {
	if img.Helm.ImageSpec != "" {
		return []watcher.HelmParameter{{Name: img.Helm.ImageSpec, Value: img.Name + ":" + to, ForceString: true}}
	}
	name, tag := img.Helm.ImageName, img.Helm.ImageTag
	if name == "" && tag == "" {
		name, tag = defaultHelmImageName, defaultHelmImageTag
	}
	var out []watcher.HelmParameter
	if name != "" {
		out = append(out, watcher.HelmParameter{Name: name, Value: img.Name, ForceString: true})
	}
	if tag != "" {
		out = append(out, watcher.HelmParameter{Name: tag, Value: to, ForceString: true})
	}
	return out
}

func kustomizeName(img *Image) string {
	if img.KustomizeName != "" {
		return img.KustomizeName
	}
	return img.Name
}

// currentVersion finds what the Application runs or is set to run: an
// override in the spec wins (it is what the next sync deploys), else the
// image as Argo CD reports it in status.summary.images. With a kustomize
// name, a running image of that name is looked for first, as
// argocd-image-updater does (ContainerImageList.ContainsImage): the
// upstream image a kustomization still carries is the one the override
// will replace, so it is deployed, and renamed says an override is due
// even at the same tag (its needsUpdate: the names differ).
func currentVersion(app *watcher.App, spec *Spec, img *Image, src *watcher.Source) (version string, deployed, renamed bool) {
	if src != nil {
		if v, ok := specVersion(img, src); ok {
			return v, true, false
		}
	}
	want := img.Ref.Repo()
	if img.KustomizeName != "" {
		if k, err := spec.parseRunning(img.KustomizeName); err == nil && k.Repo() != want {
			if v, ok := runningVersion(app, spec, k.Repo()); ok {
				return v, true, true
			}
		}
	}
	v, ok := runningVersion(app, spec, want)
	return v, ok, false
}

// Live reports whether app runs img (status.summary.images; with a
// kustomize name, an image of that name too) or img is forced: the images
// argocd-image-updater considers, and counts as an ImageUpdater's
// imagesManaged (its GetImagesFromApplication and ContainsImage).
func (s *Spec) Live(app *watcher.App, img *Image) bool {
	if img.ForceUpdate {
		return true
	}
	if img.KustomizeName != "" {
		if k, err := s.parseRunning(img.KustomizeName); err == nil {
			if _, ok := runningVersion(app, s, k.Repo()); ok {
				return true
			}
		}
	}
	_, ok := runningVersion(app, s, img.Ref.Repo())
	return ok
}

// runningVersion is the version status.summary.images gives repo.
func runningVersion(app *watcher.App, spec *Spec, repo string) (string, bool) {
	for _, s := range app.Images {
		ref, err := spec.parseRunning(s)
		if err != nil || ref.Repo() != repo {
			continue
		}
		if ref.Digest != "" {
			return ref.Tag + "@" + ref.Digest, true
		}
		return ref.Tag, true
	}
	return "", false
}

// specVersion reads the override crowsnest (or someone) already set.
func specVersion(img *Image, src *watcher.Source) (string, bool) {
	if src.Helm != nil {
		tagParam := img.Helm.ImageTag
		specParam := img.Helm.ImageSpec
		if img.Helm == (HelmNames{}) {
			tagParam = defaultHelmImageTag
		}
		for _, p := range src.Helm.Parameters {
			switch {
			case specParam != "" && p.Name == specParam:
				if _, v, ok := strings.Cut(p.Value[strings.LastIndexByte(p.Value, '/')+1:], ":"); ok {
					return v, true
				}
			case tagParam != "" && p.Name == tagParam:
				return p.Value, true
			}
		}
	}
	if src.Kustomize != nil {
		name := kustomizeName(img)
		for _, e := range src.Kustomize.Images {
			n, ref, hasEq := strings.Cut(e, "=")
			if !hasEq {
				ref = e
				n, _ = splitConstraint(stripDigest(e))
			}
			if n != name {
				continue
			}
			if at := strings.IndexByte(ref, '@'); at >= 0 {
				_, tag := splitConstraint(ref[:at])
				return tag + ref[at:], true
			}
			_, tag := splitConstraint(ref)
			return tag, true
		}
	}
	return "", false
}

func stripDigest(s string) string {
	if i := strings.IndexByte(s, '@'); i >= 0 {
		return s[:i]
	}
	return s
}
