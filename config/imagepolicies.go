package config

import (
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/labels"

	"github.com/crowsnest-dev/crowsnest/config/internal/fieldpath"
	"github.com/crowsnest-dev/crowsnest/windows/spec"
)

// ImagePolicy is crowsnest's own way to say what to update, without
// annotations on every Application: the images of the Applications it
// matches, and where to write them. The controller translates it into the
// same model as argocd-image-updater's annotations; an Application's own
// annotations win over any policy, and among policies the first match in
// file order wins.
type ImagePolicy struct {
	// Name identifies the policy in logs and Events.
	Name string `yaml:"name"`
	// Match selects Applications; every selector that is set must match.
	Match PolicyMatch `yaml:"match"`
	// Images to keep up to date.
	Images []PolicyImage `yaml:"images"`
	// WriteBack says where changes go; the default patches the Application.
	WriteBack PolicyWriteBack `yaml:"writeBack"`
}

// PolicyMatch selects Applications. At least one selector is required.
type PolicyMatch struct {
	// Applications are globs on metadata.name ("shop-*", "{web,api}").
	Applications []string `yaml:"applications"`
	// Projects are globs on spec.project.
	Projects []string `yaml:"projects"`
	// LabelSelector is a Kubernetes label selector on the Application.
	LabelSelector string `yaml:"labelSelector"`
}

// PolicyImage is one image and how to pick its version; the fields mean
// what the argocd-image-updater annotations of the same name mean.
type PolicyImage struct {
	Alias        string   `yaml:"alias"`
	Image        string   `yaml:"image"`
	Strategy     string   `yaml:"strategy"`
	Constraint   string   `yaml:"constraint"`
	AllowTags    string   `yaml:"allowTags"`
	IgnoreTags   []string `yaml:"ignoreTags"`
	Extract      string   `yaml:"extract"`
	ExtractOrder string   `yaml:"extractOrder"`
	Platforms    []string `yaml:"platforms"`
	PullSecret   string   `yaml:"pullSecret"`
	ForceUpdate  bool     `yaml:"forceUpdate"`
	Helm         struct {
		ImageName string `yaml:"imageName"`
		ImageTag  string `yaml:"imageTag"`
		ImageSpec string `yaml:"imageSpec"`
	} `yaml:"helm"`
	KustomizeImageName string `yaml:"kustomizeImageName"`
	// Verify, when set, makes signatures a tag filter: a tag whose
	// image is not signed by one of the keys is never chosen; the newest
	// tag that is wins.
	Verify *PolicyVerify `yaml:"verify"`
}

// PolicyVerify is how an image's signatures are checked.
type PolicyVerify struct {
	// Cosign checks cosign signatures with public keys.
	Cosign *PolicyCosign `yaml:"cosign"`
}

// PolicyCosign names the keys a cosign signature may be made with.
type PolicyCosign struct {
	// PublicKeys are PEM public keys (ECDSA, RSA, Ed25519), as `cosign
	// generate-key-pair` writes cosign.pub; key service references
	// (k8s://, awskms://, ...) are refused.
	PublicKeys []string `yaml:"publicKeys"`
}

// PolicyWriteBack mirrors the write-back annotations.
type PolicyWriteBack struct {
	// Method is argocd (default), git, git:repocreds or
	// git:secret:<namespace>/<name>.
	Method string `yaml:"method"`
	// Target is kustomization[:<path>] or helmvalues[:<path>] (git only);
	// empty is .argocd-source-<app>.yaml.
	Target string `yaml:"target"`
	// Branch is <branch> or <base>:<target template>.
	Branch     string `yaml:"branch"`
	Repository string `yaml:"repository"`
	// PullRequest, when set, proposes each commit in a pull request into
	// Branch instead of pushing it there (method git only).
	PullRequest *PolicyPullRequest `yaml:"pullRequest"`
	// PinDigest writes each image as tag@digest, the digest its tag
	// named when it was chosen (crowsnest.dev/pin-digest).
	PinDigest bool `yaml:"pinDigest"`
}

// PolicyPullRequest is how the pull requests of a git write-back are
// opened.
type PolicyPullRequest struct {
	// Forge is the kind of forge (github, gitlab, gitea, forgejo,
	// bitbucket, bitbucket-server, azure-devops) for a host that
	// git.forges does not name and that is not a well-known one.
	Forge string `yaml:"forge"`
	// Labels, Reviewers and Assignees are names on the forge.
	Labels    []string `yaml:"labels"`
	Reviewers []string `yaml:"reviewers"`
	Assignees []string `yaml:"assignees"`
	// Draft opens the pull request as a draft; AutoMerge asks the forge
	// to merge it once its required checks and approvals are in.
	Draft     bool `yaml:"draft"`
	AutoMerge bool `yaml:"autoMerge"`
}

// validateImagePolicies checks what can be checked without the registry
// packages (dependencies point down to config): names, selectors, that
// every image is named once. Image references and version policies are
// compiled by the controller at start, reload and `config validate`, with
// errors naming the same field paths.
func validateImagePolicies(path string, ps []ImagePolicy, errs *fieldErrors) {
	seen := map[string]bool{}
	for i := range ps {
		p := &ps[i]
		pp := fieldpath.Index(path, i)
		switch {
		case p.Name == "":
			errs.invalid(fieldpath.Join(pp, "name"), "required")
		case seen[p.Name]:
			errs.invalid(fieldpath.Join(pp, "name"), "%q is used by another policy", p.Name)
		}
		seen[p.Name] = true
		m := &p.Match
		if len(m.Applications) == 0 && len(m.Projects) == 0 && m.LabelSelector == "" {
			errs.invalid(fieldpath.Join(pp, "match"), "set at least one of applications, projects or labelSelector")
		}
		for _, list := range []struct {
			name string
			vals []string
		}{{"applications", m.Applications}, {"projects", m.Projects}} {
			for j, g := range list.vals {
				if _, err := spec.CompileGlob(g); err != nil {
					errs.invalid(fieldpath.Index(fieldpath.Join(fieldpath.Join(pp, "match"), list.name), j), "%v", err)
				}
			}
		}
		if m.LabelSelector != "" {
			if _, err := labels.Parse(m.LabelSelector); err != nil {
				errs.invalid(fieldpath.Join(fieldpath.Join(pp, "match"), "labelSelector"), "invalid label selector %q: %v", m.LabelSelector, err)
			}
		}
		if len(p.Images) == 0 {
			errs.invalid(fieldpath.Join(pp, "images"), "required: at least one image")
		}
		aliases := map[string]bool{}
		for j := range p.Images {
			img := &p.Images[j]
			ip := fieldpath.Index(fieldpath.Join(pp, "images"), j)
			if img.Image == "" {
				errs.invalid(fieldpath.Join(ip, "image"), "required")
			}
			alias := img.Alias
			if alias == "" {
				alias = img.Image
			}
			if aliases[alias] {
				errs.invalid(fieldpath.Join(ip, "alias"), "%q names two images of the policy", alias)
			}
			aliases[alias] = true
		}
		if m := p.WriteBack.Method; m != "" && !slices.Contains([]string{"argocd", "git", "git:repocreds"}, m) && !strings.HasPrefix(m, "git:secret:") {
			errs.invalid(fieldpath.Join(fieldpath.Join(pp, "writeBack"), "method"), "unsupported value %q, want argocd, git, git:repocreds or git:secret:<namespace>/<name>", m)
		}
		if pr := p.WriteBack.PullRequest; pr != nil {
			prp := fieldpath.Join(fieldpath.Join(pp, "writeBack"), "pullRequest")
			if pr.Forge != "" && !slices.Contains(ForgeKinds, pr.Forge) {
				errs.invalid(fieldpath.Join(prp, "forge"), "unsupported value %q, want one of %s", pr.Forge, strings.Join(ForgeKinds, ", "))
			}
			for _, l := range []struct {
				name  string
				names []string
			}{{"labels", pr.Labels}, {"reviewers", pr.Reviewers}, {"assignees", pr.Assignees}} {
				for j, n := range l.names {
					if strings.TrimSpace(n) == "" || strings.ContainsAny(n, ",\n\r\t") {
						errs.invalid(fieldpath.Index(fieldpath.Join(prp, l.name), j), "%q: want a name without commas, tabs or line breaks", n)
					}
				}
			}
		}
	}
}
