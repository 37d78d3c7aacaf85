package gitplan

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/url"
	"strings"

	"github.com/crowsnest-dev/crowsnest/controller/imageupdate"
	"github.com/crowsnest-dev/crowsnest/watcher"
	"github.com/crowsnest-dev/crowsnest/writeback/git/branchtmpl"
)

// Change is what one source of an Application needs written to Git: the
// data of writeback/git's Change that the Application, its Spec and its
// changes decide. The caller adds who pushes it (key, credentials) and the
// Scope of files it may write.
type Change struct {
	// App is the Application's name.
	App string
	// Project is the Application's AppProject ("default" when it names
	// none).
	Project string
	// RepoURL is the repository written: the git-repository annotation's,
	// the $ref source's for a $ref/ values file, else the source's.
	RepoURL string
	// Path is the source's path in the repository ("" for a $ref/ values
	// file: Target.Path is from the root).
	Path string
	// Branch is "branch" or "base:target"; "" is the remote's default
	// branch.
	Branch string
	// Helm is true when the images are Helm parameters (the helm section
	// of .argocd-source-<app>.yaml), false for kustomize.
	Helm bool
	// Target is the file edited: Kind is TargetKustomization,
	// TargetHelmValues or TargetArgoCDSource (the default, without a
	// Path).
	Target imageupdate.Target
	// OwnSource is true when the file is in the source the images belong
	// to, false when a $ref/ values file names another source's: the
	// scope of the change includes Path only when true.
	OwnSource bool
	Images    []Image
	// PullRequest, when set, proposes the change in a pull request into
	// Branch (then never "base:target") from PullRequest.Head.
	PullRequest *PullRequest
}

// PullRequest is how a change is proposed: imageupdate.PullRequest's
// settings and the head branch they and the change name.
type PullRequest struct {
	// Head is the pull request's branch (see head).
	Head                         string
	Forge                        string
	Labels, Reviewers, Assignees []string
	Draft, AutoMerge             bool
}

// Image is one image's update. Its fields are writeback/git's Image's,
// name for name and in order, so that the controller converts one into
// the other (gitwb.Image(img)): a field added to one side only breaks that
// conversion at compile time, and gitplan stays free of go-git.
type Image struct {
	// Alias is the image-list alias, for messages only.
	Alias string
	// Name is the image repository as deployed.
	Name string
	// KustomizeName is the kustomize images[].name to edit ("" is Name);
	// NewName, when set, replaces the repository (kustomize newName).
	KustomizeName string
	NewName       string
	// NewTag is the tag written, without the digest; Digest is set for
	// pinned results.
	NewTag string
	Digest string
	// HelmImageName, HelmImageTag and HelmImageSpec are the dotted Helm
	// keys of the image's helm.image-name, helm.image-tag and
	// helm.image-spec.
	HelmImageName string
	HelmImageTag  string
	HelmImageSpec string
	// Revision and Source are the new image's source revision and
	// repository (its org.opencontainers.image.revision and .source),
	// where the registry says them: for pull request bodies.
	Revision, Source string
}

// Changes turns the changes decided for app into its Git writes: one per
// source written, in the order the sources first appear in changes. A
// helmvalues target path that starts with $<ref>/ names the file in the
// source with that ref, as Argo CD's valueFiles do: the values repository
// of a chart from a Helm repository.
func Changes(app *watcher.App, spec *imageupdate.Spec, changes []imageupdate.Change) ([]Change, error) {
	var order []int
	groups := map[int][]imageupdate.Change{}
	for i := range changes {
		idx := changes[i].SourceIndex
		if _, ok := groups[idx]; !ok {
			order = append(order, idx)
		}
		groups[idx] = append(groups[idx], changes[i])
	}
	out := make([]Change, 0, len(order))
	for _, idx := range order {
		ch, err := change(app, spec, idx, groups[idx])
		if err != nil {
			return nil, err
		}
		out = append(out, ch)
	}
	return out, nil
}

// change is the Git write for the images of source idx (-1:
// spec.source).
func change(app *watcher.App, spec *imageupdate.Spec, idx int, changes []imageupdate.Change) (Change, error) {
	var src *watcher.Source
	switch {
	case idx >= 0 && idx < len(app.Sources):
		src = &app.Sources[idx]
	case idx < 0 && len(app.Sources) > 0:
		src = &app.Sources[0]
	default:
		return Change{}, fmt.Errorf("git write-back: the Application has no source to write to")
	}
	ch := Change{App: app.Name, RepoURL: src.RepoURL, Path: src.Path, Project: cmp.Or(app.Project, "default")}
	branchOf := src
	switch spec.WriteBack.Target.Kind {
	case imageupdate.TargetKustomization:
		ch.Target = imageupdate.Target{Kind: imageupdate.TargetKustomization, Path: spec.WriteBack.Target.Path}
	case imageupdate.TargetHelmValues:
		ch.Target = imageupdate.Target{Kind: imageupdate.TargetHelmValues, Path: spec.WriteBack.Target.Path}
		if p, ok := strings.CutPrefix(spec.WriteBack.Target.Path, "$"); ok {
			ref, rest, _ := strings.Cut(p, "/")
			refSrc := RefSource(app, ref)
			switch {
			case refSrc == nil:
				return Change{}, fmt.Errorf("git write-back: write-back-target helmvalues:%s: no source has ref %q", spec.WriteBack.Target.Path, ref)
			case rest == "":
				return Change{}, fmt.Errorf("git write-back: write-back-target helmvalues:%s: want $%s/<path to the values file>", spec.WriteBack.Target.Path, ref)
			}
			ch.RepoURL, ch.Path, ch.Target.Path, branchOf = refSrc.RepoURL, "", "/"+rest, refSrc
		}
	default:
		ch.Target = imageupdate.Target{Kind: imageupdate.TargetArgoCDSource}
	}
	if spec.WriteBack.Repository != "" {
		ch.RepoURL = spec.WriteBack.Repository
	} else if branchOf.Chart != "" {
		return Change{}, fmt.Errorf("git write-back: source %s is chart %q from a Helm repository, not Git; "+
			"name the values file with write-back-target helmvalues:$<ref>/<path> or set git-repository", branchOf.RepoURL, branchOf.Chart)
	}
	b, err := branch(app, spec, branchOf)
	if err != nil {
		return Change{}, err
	}
	ch.Branch = b
	for i := range changes {
		c := &changes[i]
		if len(c.Helm) > 0 {
			ch.Helm = true
		}
		img := image(spec, c)
		if spec.WriteBack.PullRequest != nil {
			// Only pull request bodies show them.
			img.Revision, img.Source = c.Revision, c.Source
		}
		ch.Images = append(ch.Images, img)
	}
	ch.OwnSource = branchOf == src
	if p := spec.WriteBack.PullRequest; p != nil {
		if spec.WriteBack.PushBranch != "" {
			return Change{}, fmt.Errorf("git write-back: a pull request takes only its base branch, not base:target")
		}
		ch.PullRequest = &PullRequest{Head: head(&ch, spec), Forge: p.Forge, Labels: p.Labels, Reviewers: p.Reviewers,
			Assignees: p.Assignees, Draft: p.Draft, AutoMerge: p.AutoMerge}
	}
	return ch, nil
}

// head is the pull request branch of ch: one per repository, base branch,
// AppProject and credentials, so that every Application's change for
// that base is one pull request, kept current, and one tenant's change
// never rides on another's branch (or its credentials).
//
//   - "crowsnest/<project>/<base>" ("default" for the remote's default
//     branch), with "-<8 hex digits>" of the credentials Secret when the
//     write-back names one;
//   - for ImageUpdater resources, argocd-image-updater's
//     "image-updater-<8 hex digits>": a hash of the repository, base
//     branch and (crowsnest's) project and credentials. argocd-image-
//     updater adds a hash of the change set, so that every new tag opens
//     another pull request; crowsnest keeps one current instead.
func head(ch *Change, spec *imageupdate.Spec) string {
	creds := spec.WriteBack.GitCredentials
	if spec.WriteBack.PullRequest.ImageUpdaterHead {
		sum := sha256.Sum256([]byte(ch.RepoURL + "|" + ch.Branch + "|" + ch.Project + "|" + creds))
		return "image-updater-" + hex.EncodeToString(sum[:4])
	}
	h := "crowsnest/" + ch.Project + "/" + cmp.Or(ch.Branch, "default")
	if who := credentialsOf(ch.RepoURL, creds); who != "" {
		sum := sha256.Sum256([]byte(who))
		h += "-" + hex.EncodeToString(sum[:4])
	}
	return h
}

// credentialsOf names the credentials a change pushes with besides the
// repository's own: a named Secret, and user:password@ in its URL (two
// URLs with different ones are different batches, so they need different
// heads). "" for the repository's Argo CD credentials.
func credentialsOf(repoURL, creds string) string {
	if !strings.HasPrefix(creds, "secret:") {
		creds = ""
	}
	if u, err := url.Parse(repoURL); err == nil && u.User != nil {
		creds += "\x00" + u.User.String()
	}
	return creds
}

// image is the Git write of one changed image.
func image(spec *imageupdate.Spec, c *imageupdate.Change) Image {
	img := Image{Alias: c.Alias, Name: c.Image, NewTag: c.To, Digest: c.Digest}
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
	return img
}

// branch is the write-back branch of a change to src: the git-branch
// annotation's (checked when read), or else src's targetRevision, which
// must be a branch Git could push to (a Helm chart's "1.*" or a
// "v1 rc" is not): checked here, before the change joins a batch with
// other Applications', with the writer's own rules.
func branch(app *watcher.App, spec *imageupdate.Spec, src *watcher.Source) (string, error) {
	b := spec.WriteBack.Branch
	if rev := src.TargetRevision; b == "" && rev != "" && rev != branchtmpl.DefaultBranch {
		if err := branchtmpl.CheckName(rev); err != nil {
			return "", fmt.Errorf("git write-back: %s: %w; name the branch to write to with the git-branch annotation", revisionField(app, src), err)
		}
		b = rev
	}
	if spec.WriteBack.PushBranch != "" {
		// ":target" commits on top of the revision, HEAD without one.
		b = cmp.Or(b, branchtmpl.DefaultBranch) + ":" + spec.WriteBack.PushBranch
	}
	return b, nil
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

// RefSource is app's source with ref name (Argo CD's $name in valueFiles),
// or nil.
func RefSource(app *watcher.App, name string) *watcher.Source {
	for i := range app.Sources {
		if app.Sources[i].Ref == name {
			return &app.Sources[i]
		}
	}
	return nil
}
