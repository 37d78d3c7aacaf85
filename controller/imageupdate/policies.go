package imageupdate

import (
	"errors"
	"fmt"
	"maps"
	"strings"

	"k8s.io/apimachinery/pkg/labels"

	"github.com/crowsnest-dev/crowsnest/config"
	"github.com/crowsnest-dev/crowsnest/registry/imageref"
	"github.com/crowsnest-dev/crowsnest/registry/policy"
	"github.com/crowsnest-dev/crowsnest/registry/verify"
	"github.com/crowsnest-dev/crowsnest/watcher"
	"github.com/crowsnest-dev/crowsnest/windows/spec"
)

// Policies are crowsnest's image policies, compiled: each a Spec and the
// selectors of the Applications it applies to.
type Policies struct {
	list []compiledPolicy
}

type compiledPolicy struct {
	name     string
	apps     []*spec.Glob
	projects []*spec.Glob
	selector labels.Selector
	spec     Spec
}

// policyFields maps selection's field names to the config's keys.
var policyFields = map[string]string{
	"strategy": "strategy", "constraint": "constraint", "allow-tags": "allowTags", "ignore-tags": "ignoreTags",
	"extract": "extract", "extract-order": "extractOrder", "platforms": "platforms",
}

// writeBackFields maps write-back annotation keys to the config's keys.
var writeBackFields = map[string]string{
	Prefix + KeyWriteBack: "method", Prefix + KeyWriteTarget: "target",
	Prefix + KeyGitBranch: "branch", Prefix + KeyGitRepository: "repository",
	OwnPrefix + KeyPullRequest: "pullRequest", OwnPrefix + KeyPullRequestForge: "pullRequest.forge",
	OwnPrefix + KeyPullRequestLabels: "pullRequest.labels", OwnPrefix + KeyPullRequestReviewers: "pullRequest.reviewers",
	OwnPrefix + KeyPullRequestAssignees: "pullRequest.assignees", OwnPrefix + KeyPullRequestDraft: "pullRequest.draft",
	OwnPrefix + KeyPullRequestAutoMerge: "pullRequest.autoMerge", OwnPrefix + KeyPinDigest: "pinDigest",
}

// CompilePolicies checks and compiles the config's imagePolicies. Errors
// name the field path ("imagePolicies[0].images[1].constraint: ...").
func CompilePolicies(ps []config.ImagePolicy) (*Policies, error) {
	out := &Policies{}
	var errs []error
	fail := func(path, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: %s", path, fmt.Sprintf(format, args...)))
	}
	for i := range ps {
		p := &ps[i]
		pp := fmt.Sprintf("imagePolicies[%d]", i)
		cp := compiledPolicy{name: p.Name, selector: labels.Everything(), spec: Spec{Source: "image policy " + p.Name}}
		for _, g := range p.Match.Applications {
			if c, err := spec.CompileGlob(g); err == nil {
				cp.apps = append(cp.apps, c)
			}
		}
		for _, g := range p.Match.Projects {
			if c, err := spec.CompileGlob(g); err == nil {
				cp.projects = append(cp.projects, c)
			}
		}
		if p.Match.LabelSelector != "" {
			sel, err := labels.Parse(p.Match.LabelSelector)
			if err != nil {
				fail(pp+".match.labelSelector", "%v", err)
			} else {
				cp.selector = sel
			}
		}
		for j := range p.Images {
			img, imgErrs := policyImage(fmt.Sprintf("%s.images[%d]", pp, j), &p.Images[j])
			errs = append(errs, imgErrs...)
			if len(imgErrs) == 0 {
				cp.spec.Images = append(cp.spec.Images, img)
			}
		}
		ann := map[string]string{Prefix + KeyWriteBack: p.WriteBack.Method}
		for key, v := range map[string]string{KeyWriteTarget: p.WriteBack.Target, KeyGitBranch: p.WriteBack.Branch, KeyGitRepository: p.WriteBack.Repository} {
			if v != "" {
				ann[Prefix+key] = v
			}
		}
		if pr := p.WriteBack.PullRequest; pr != nil {
			maps.Copy(ann, PullRequestAnnotations(PolicyPullRequest(pr)))
		}
		if p.WriteBack.PinDigest {
			ann[OwnPrefix+KeyPinDigest] = "true"
		}
		wb, wbErrs := readWriteBack(ann)
		for _, err := range wbErrs {
			var ae *AnnotationError
			if errors.As(err, &ae) {
				fail(pp+".writeBack."+writeBackFields[ae.Key], "%s", ae.Msg)
			}
		}
		if name, ok := strings.CutPrefix(wb.GitCredentials, "secret:"); ok && !strings.Contains(name, "/") {
			// A policy spans namespaces: the operator names the Secret's
			// (the annotations' "git:secret:<name>" is their own namespace's).
			fail(pp+".writeBack.method", "%q: an image policy names the Secret's namespace: git:secret:<namespace>/<name>", p.WriteBack.Method)
			wb.Method = ""
		}
		cp.spec.WriteBack = wb
		out.list = append(out.list, cp)
	}
	return out, errors.Join(errs...)
}

func policyImage(path string, pi *config.PolicyImage) (Image, []error) {
	var errs []error
	fail := func(field, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s.%s: %s", path, field, fmt.Sprintf(format, args...)))
	}
	ref, err := imageref.Parse(pi.Image)
	if err != nil {
		fail("image", "%v", err)
		return Image{}, errs
	}
	if strings.ContainsAny(pi.Image, "@") || tagWritten(pi.Image) {
		fail("image", "%q: name the repository only; the version comes from strategy and constraint", pi.Image)
	}
	img := Image{
		Alias: pi.Alias, Name: pi.Image, Ref: ref, PullSecret: pi.PullSecret, ForceUpdate: pi.ForceUpdate,
		Helm:          HelmNames{ImageName: pi.Helm.ImageName, ImageTag: pi.Helm.ImageTag, ImageSpec: pi.Helm.ImageSpec},
		KustomizeName: pi.KustomizeImageName,
		Policy: policy.Spec{Strategy: pi.Strategy, Constraint: pi.Constraint, AllowTags: pi.AllowTags, IgnoreTags: pi.IgnoreTags,
			Extract: pi.Extract, ExtractOrder: pi.ExtractOrder, Platforms: pi.Platforms},
	}
	if img.Alias == "" {
		img.Alias = pi.Image
	}
	if pi.PullSecret != "" {
		if _, err := config.ParseCredentials(pi.PullSecret); err != nil {
			fail("pullSecret", "%v", err)
		}
	}
	if pi.Verify != nil {
		img.Verify = policyKeys(pi.Verify, fail)
	}
	if img.Helm.ImageSpec != "" && (img.Helm.ImageName != "" || img.Helm.ImageTag != "") {
		fail("helm", "set either imageSpec or imageName/imageTag, not both")
	}
	if _, err := policy.Compile(ref.Repo(), img.Policy); err != nil {
		for _, e := range unjoin(err) {
			var pe *policy.Error
			if errors.As(e, &pe) {
				field, rest, _ := strings.Cut(pe.Field, "[")
				key := policyFields[field]
				if key == "" {
					key = field
				}
				if rest != "" {
					key += "[" + rest
				}
				fail(key, "%s", pe.Msg)
			} else {
				fail("image", "%v", e)
			}
		}
	}
	return img, errs
}

// tagWritten reports whether a reference names a tag (a colon in its last
// path segment).
func tagWritten(ref string) bool {
	return strings.Contains(ref[strings.LastIndexByte(ref, '/')+1:], ":")
}

// Match returns the Spec of the first policy that applies to app, and its
// name; nil when none does.
func (p *Policies) Match(app *watcher.App) (*Spec, string) {
	if p == nil {
		return nil, ""
	}
	for i := range p.list {
		cp := &p.list[i]
		if cp.matches(app) {
			s := cp.spec
			s.Images = append([]Image(nil), cp.spec.Images...)
			return &s, cp.name
		}
	}
	return nil, ""
}

// matches requires every selector that is set.
func (cp *compiledPolicy) matches(app *watcher.App) bool {
	if len(cp.apps) > 0 && !anyGlob(cp.apps, app.Name) {
		return false
	}
	if len(cp.projects) > 0 && !anyGlob(cp.projects, app.Project) {
		return false
	}
	return cp.selector.Matches(labels.Set(app.Labels))
}

func anyGlob(gs []*spec.Glob, s string) bool {
	for _, g := range gs {
		if g.Match(s) {
			return true
		}
	}
	return false
}

// policyKeys reads an image's verify block; every problem is reported
// with its field, and a block with a problem verifies nothing: the image
// does not compile, so it is never updated unverified.
func policyKeys(v *config.PolicyVerify, fail func(field, format string, args ...any)) *verify.KeySet {
	if v.Cosign == nil {
		fail("verify.cosign", "required: the only verifier is cosign")
		return nil
	}
	keys := v.Cosign.PublicKeys
	if len(keys) == 0 {
		fail("verify.cosign.publicKeys", "required: at least one PEM public key")
		return nil
	}
	if len(keys) > verify.MaxKeys {
		fail("verify.cosign.publicKeys", "%d keys, at most %d", len(keys), verify.MaxKeys)
		return nil
	}
	bad := false
	for i, k := range keys {
		if _, _, err := verify.ParseKey(k); err != nil {
			fail(fmt.Sprintf("verify.cosign.publicKeys[%d]", i), "%v", err)
			bad = true
		}
	}
	if bad {
		return nil
	}
	ks, err := verify.ParseKeys(keys)
	if err != nil {
		fail("verify.cosign.publicKeys", "%v", err)
		return nil
	}
	return ks
}
