package imageupdate

import (
	"slices"
	"strings"

	"github.com/crowsnest-dev/crowsnest/registry/imageref"
	"github.com/crowsnest-dev/crowsnest/registry/policy"
	"github.com/crowsnest-dev/crowsnest/registry/verify"
)

// Spec is everything crowsnest updates in one Application and how, whether
// it came from annotations or from crowsnest's image policies.
type Spec struct {
	// Images to keep up to date, in the order they were written.
	Images []Image
	// WriteBack says where changes go.
	WriteBack WriteBack
	// Source names where the spec came from, for logs and Events:
	// SourceAnnotations or "policy <name>".
	Source string

	// names completes image names for registry lookups (see Qualify).
	names func(image string) string
}

// Image is one image to keep up to date.
type Image struct {
	// Alias names the image in per-image settings; it defaults to the
	// image's repository path.
	Alias string
	// Name is the image as written, without the constraint ("nginx",
	// "ghcr.io/org/app"); it is what Helm image-name parameters receive.
	Name string
	// Ref is the parsed image reference (the tag in it is ignored).
	Ref imageref.Image
	// Policy picks the version; its Constraint holds the constraint
	// written after the image name in image-list.
	Policy policy.Spec
	// PullSecret is a credentials reference for this image's registry;
	// empty uses the registry's own.
	PullSecret string
	// ForceUpdate updates the image even when the Application does not
	// run it yet.
	ForceUpdate bool
	// Helm names the Helm parameters that receive the image.
	Helm HelmNames
	// KustomizeName is the image name kustomize matches ("images:" name);
	// empty means the image's repository.
	KustomizeName string
	// Verify, when set, are the keys one of which must have signed a tag's
	// image for it to be chosen (cosign signatures).
	Verify *verify.KeySet
}

// HelmNames are Helm parameter names (dotted value paths).
type HelmNames struct {
	// ImageName receives the repository, ImageTag the tag (or
	// tag@digest); ImageSpec, when set, receives the whole reference
	// instead of both.
	ImageName string
	ImageTag  string
	ImageSpec string
}

// Method is how changes are written back.
type Method string

// Write-back methods.
const (
	// MethodArgoCD patches the Application's parameter overrides.
	MethodArgoCD Method = "argocd"
	// MethodGit commits to the Application's Git repository.
	MethodGit Method = "git"
)

// TargetKind is the file a Git write-back edits.
type TargetKind string

// Git write-back targets.
const (
	// TargetArgoCDSource is .argocd-source-<app>.yaml, Argo CD's parameter
	// override file, next to the Application's source path.
	TargetArgoCDSource TargetKind = "argocd-source"
	// TargetKustomization is a kustomization.yaml's images: list.
	TargetKustomization TargetKind = "kustomization"
	// TargetHelmValues is a Helm values file.
	TargetHelmValues TargetKind = "helmvalues"
)

// WriteBack says where and how changes are written.
type WriteBack struct {
	Method Method
	// GitCredentials is "" (the repository's Argo CD credentials),
	// "repocreds" (the same, said explicitly) or "secret:<ns>/<name>";
	// "secret:<name>" until ResolveIn names the namespace.
	GitCredentials string
	// Target is the file to edit with MethodGit.
	Target Target
	// Branch is the branch to check out and commit on; empty is the
	// Application's targetRevision.
	Branch string
	// PushBranch, when set, is a text/template for the branch to push to
	// (argocd-image-updater's "base:target" form); the commit starts
	// from Branch.
	PushBranch string
	// Repository overrides the Git repository URL.
	Repository string
	// PullRequest, when set, proposes the commit in a pull request into
	// Branch instead of pushing it there (MethodGit only; PushBranch is
	// then empty).
	PullRequest *PullRequest
	// PinDigest writes every image as tag@digest (Kustomize images,
	// Helm tag parameters and values, .argocd-source files alike), the
	// digest its tag named when it was chosen: what runs is exactly what
	// was chosen, and a tag pushed again is a change.
	PinDigest bool
}

// Target is a file a Git write-back edits.
type Target struct {
	Kind TargetKind
	// Path is the file's folder (kustomization) or file (helmvalues)
	// relative to the Application's source path, or to the repository
	// root when it starts with "/"; empty is the kind's default.
	Path string
}

// ResolveIn completes what the spec names relative to the Application's
// namespace: a write-back Secret written without one ("git:secret:<name>")
// is a Secret there, as argocd-image-updater reads it. Called once the
// Application is known, before the tenancy rules look at the spec.
func (s *Spec) ResolveIn(namespace string) {
	if name, ok := strings.CutPrefix(s.WriteBack.GitCredentials, "secret:"); ok && !strings.Contains(name, "/") {
		s.WriteBack.GitCredentials = "secret:" + namespace + "/" + name
	}
}

// Same reports whether w and o write the same way (their pull requests
// compared by value).
func (w WriteBack) Same(o WriteBack) bool {
	wp, op := w.PullRequest, o.PullRequest
	w.PullRequest, o.PullRequest = nil, nil
	if w != o || (wp == nil) != (op == nil) {
		return false
	}
	return wp == nil || wp.Forge == op.Forge && slices.Equal(wp.Labels, op.Labels) && slices.Equal(wp.Reviewers, op.Reviewers) &&
		slices.Equal(wp.Assignees, op.Assignees) && wp.Draft == op.Draft && wp.AutoMerge == op.AutoMerge && wp.ImageUpdaterHead == op.ImageUpdaterHead
}
