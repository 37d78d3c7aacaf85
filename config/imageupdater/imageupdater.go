package imageupdater

import (
	"cmp"
	"fmt"
	"path"
	"regexp"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/yaml"

	"github.com/crowsnest-dev/crowsnest/config"
	"github.com/crowsnest-dev/crowsnest/config/internal/fieldpath"
)

// Resource is argocd-image-updater 1.x's ImageUpdater custom resource
// (argocd-image-updater.argoproj.io/v1alpha1), read unchanged: the same
// field names, the same meaning. crowsnest reads its spec and writes its
// status; the status here is only what is needed to compare.
type Resource struct {
	APIVersion string            `json:"apiVersion,omitempty"`
	Kind       string            `json:"kind,omitempty"`
	Metadata   metav1.ObjectMeta `json:"metadata"`
	Spec       Spec              `json:"spec"`
	// Status is kept as read; crowsnest rebuilds it rather than edit it.
	Status map[string]any `json:"status,omitempty"`
}

// Group, Version and Plural name the resource on the apiserver; Kind is
// its kind.
const (
	Group   = "argocd-image-updater.argoproj.io"
	Version = "v1alpha1"
	Plural  = "imageupdaters"
	Kind    = "ImageUpdater"
)

// Spec is the resource's spec. Settings written at the spec
// level are defaults for every applicationRef and image below.
type Spec struct {
	CommonUpdateSettings *UpdateSettings  `json:"commonUpdateSettings,omitempty"`
	WriteBackConfig      *WriteBackConfig `json:"writeBackConfig,omitempty"`
	ApplicationRefs      []AppRef         `json:"applicationRefs"`
	ImagesVerification   *Verification    `json:"imagesVerification,omitempty"`
}

// AppRef selects Applications in the resource's own namespace by
// name glob and labels, and says what to update in them.
type AppRef struct {
	NamePattern          string                `json:"namePattern"`
	LabelSelectors       *metav1.LabelSelector `json:"labelSelectors,omitempty"`
	UseAnnotations       *bool                 `json:"useAnnotations,omitempty"`
	ImagesVerification   *Verification         `json:"imagesVerification,omitempty"`
	CommonUpdateSettings *UpdateSettings       `json:"commonUpdateSettings,omitempty"`
	WriteBackConfig      *WriteBackConfig      `json:"writeBackConfig,omitempty"`
	Images               []Image               `json:"images,omitempty"`
}

// Image is one image: Alias names it, ImageName is the image with
// an optional version constraint after the colon ("nginx:1.27.x").
type Image struct {
	Alias                string          `json:"alias"`
	ImageName            string          `json:"imageName"`
	CommonUpdateSettings *UpdateSettings `json:"commonUpdateSettings,omitempty"`
	ManifestTargets      *Targets        `json:"manifestTargets,omitempty"`
	ImagesVerification   *Verification   `json:"imagesVerification,omitempty"`
}

// UpdateSettings are the version-selection settings; a field left unset
// inherits from the level above.
type UpdateSettings struct {
	UpdateStrategy *string  `json:"updateStrategy,omitempty"`
	ForceUpdate    *bool    `json:"forceUpdate,omitempty"`
	AllowTags      *string  `json:"allowTags,omitempty"`
	IgnoreTags     []string `json:"ignoreTags,omitempty"`
	PullSecret     *string  `json:"pullSecret,omitempty"`
	Platforms      []string `json:"platforms,omitempty"`
}

// Targets names where an image goes in Helm or Kustomize sources
// (plugin targets are read, and refused: crowsnest does not write them).
type Targets struct {
	Helm      *HelmTarget      `json:"helm,omitempty"`
	Kustomize *KustomizeTarget `json:"kustomize,omitempty"`
	Plugin    *map[string]any  `json:"plugin,omitempty"`
}

// KustomizeTarget names the image in a kustomization's images list.
type KustomizeTarget struct {
	Name *string `json:"name"`
}

// HelmTarget names the Helm parameters an image is written to.
type HelmTarget struct {
	Name *string `json:"name,omitempty"`
	Tag  *string `json:"tag,omitempty"`
	Spec *string `json:"spec,omitempty"`
}

// Verification is cosign signature verification of the images below
// it. Enabled (true when the block is there and it is not set) and
// CosignKey each override the level above's on their own.
type Verification struct {
	Enabled   *bool      `json:"enabled,omitempty"`
	CosignKey *CosignKey `json:"cosignKey,omitempty"`
}

// CosignKey names a PEM public key: the key Key of the Secret SecretName
// in the resource's own namespace (argocd-image-updater has no field for
// another namespace).
type CosignKey struct {
	SecretName string `json:"secretName"`
	Key        string `json:"key"`
}

// Parse reads one ImageUpdater object, YAML or JSON, as kubectl
// or the apiserver gives it. Unknown fields are errors (a misspelt setting
// would otherwise be silently ignored); the status is read loosely.
func Parse(data []byte) (*Resource, error) {
	var u Resource
	if err := yaml.UnmarshalStrict(data, &u); err != nil {
		return nil, fmt.Errorf("reading ImageUpdater: %w", err)
	}
	if u.Kind != "" && u.Kind != Kind {
		return nil, fmt.Errorf("reading ImageUpdater: kind is %q, want %s", u.Kind, Kind)
	}
	if g, _, _ := strings.Cut(u.APIVersion, "/"); u.APIVersion != "" && g != Group {
		return nil, fmt.Errorf("reading ImageUpdater: apiVersion is %q, want %s/%s", u.APIVersion, Group, Version)
	}
	return &u, nil
}

// Rule is one applicationRef with the settings of the levels above
// it merged in, as argocd-image-updater 1.x merges them: spec, then
// applicationRef, then image, a field set at a lower level winning.
// Rules() returns them most specific first; an Application takes the first
// rule that matches it.
type Rule struct {
	// Path is the applicationRef's field path, "spec.applicationRefs[1]".
	Path string
	// Namespace is the resource's: it selects Applications there only.
	Namespace   string
	NamePattern string
	// LabelSelector is the selector as a string; "" selects every label
	// set.
	LabelSelector string
	// UseAnnotations says the Application's own argocd-image-updater
	// annotations say what to update; Images and WriteBack are then empty.
	UseAnnotations bool
	// NoWrite, when set, is the gitConfig.pullRequest of a write-back that
	// cannot be honoured (see the problems): the rule keeps the
	// Applications it selects, so that no broader rule pushes where a
	// review was asked for, and writes nothing.
	NoWrite string
	// Verify, for a useAnnotations rule, is the applicationRef's own
	// imagesVerification when it is on (argocd-image-updater reads no
	// other level for annotated images): every image of the annotations
	// must then be signed with its key.
	Verify *VerifyKey
	// Unverified, for a useAnnotations rule, is the path of an
	// imagesVerification that is on and cannot be honoured (no usable
	// cosignKey): the annotations' images are then not updated.
	Unverified string
	// Images are the images that translated without problems.
	Images []RuleImage
	// WriteBack is the merged write-back configuration.
	WriteBack config.PolicyWriteBack
	// WriteBackFields maps each WriteBack field set (method, target,
	// branch, repository, pullRequest, pullRequest.labels) to the resource
	// field it came from.
	WriteBackFields map[string]string

	selector    labels.Selector
	specificity int
}

// RuleImage is one image of a rule, in crowsnest's image policy
// terms (config.PolicyImage), and where each setting came from.
type RuleImage struct {
	// Path is the image's field path, "spec.applicationRefs[0].images[2]".
	Path string
	config.PolicyImage
	// Verify, when set, is the cosign key the image's tags must be signed
	// with (the merged imagesVerification); nil is no verification.
	Verify *VerifyKey
	// Fields maps each config.PolicyImage key set ("image", "constraint",
	// "strategy", "allowTags", "ignoreTags", "pullSecret", "platforms",
	// "forceUpdate", "helm.imageName", "helm.imageTag", "helm.imageSpec",
	// "kustomizeImageName") to the resource field it came from, e.g.
	// "spec.commonUpdateSettings.updateStrategy" for a spec-wide default.
	Fields map[string]string
}

// Matches reports whether the rule selects the Application namespace/name
// with the given labels: the resource's namespace, the name glob (Go's
// path.Match, as argocd-image-updater's filepath.Match) and the labels.
func (r *Rule) Matches(namespace, name string, lbls map[string]string) bool {
	if namespace != r.Namespace {
		return false
	}
	if ok, err := path.Match(r.NamePattern, name); err != nil || !ok {
		return false
	}
	return r.selector == nil || r.selector.Matches(labels.Set(lbls))
}

// ImagePolicy returns the rule as one of crowsnest's imagePolicies entries
// (for `crowsnest migrate`). A policy has no namespace: the caller must
// keep the rule to r.Namespace some other way, and a useAnnotations rule
// has no policy equivalent (crowsnest reads annotations anyway). An
// image's Verify is not carried: a policy's verify takes the PEM key
// inline, and the rule only names the Secret holding it.
func (r *Rule) ImagePolicy(name string) config.ImagePolicy {
	p := config.ImagePolicy{Name: name, WriteBack: r.WriteBack}
	p.Match.Applications = []string{r.NamePattern}
	p.Match.LabelSelector = r.LabelSelector
	for i := range r.Images {
		p.Images = append(p.Images, r.Images[i].PolicyImage)
	}
	return p
}

// aliasRE is the CRD's alias pattern, tightened to what crowsnest's
// per-image settings accept (no '.', which separates an alias from the
// setting in annotation keys) and to its length.
var aliasRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_-]{0,62}$`)

// maxPatternBytes is registry/policy's MaxPatternBytes (config imports
// no registry package): an allowTags pattern past it is refused before
// it is compiled, and so is a namePattern.
const maxPatternBytes = 1024

// MaxRules and MaxImages cap what one resource may ask for:
// each image costs registry requests on every poll, and whoever may write
// an ImageUpdater is no more trusted than an Application's annotations
// (see imageupdate.MaxImages).
const (
	MaxRules  = 100
	MaxImages = 200
)

// Rules translates the resource into crowsnest's model, one rule per
// applicationRef, most specific first (argocd-image-updater's order: an
// exact name before any glob, more literal characters first, a label
// selector and each of its terms adding weight; ties keep written order).
// Each problem names the field ("spec.applicationRefs[0].images[2].
// commonUpdateSettings.updateStrategy: ..."); a broken image is left out
// of its rule, a broken applicationRef (selector, write-back) out of the
// result, and the rest stays; an Ignored problem leaves nothing out.
func (u *Resource) Rules() ([]Rule, []Problem) {
	var errs problems
	s := &u.Spec
	if len(s.ApplicationRefs) == 0 {
		errs.invalid("spec.applicationRefs", "required: at least one applicationRef")
	}
	if len(s.ApplicationRefs) > MaxRules {
		errs.invalid("spec.applicationRefs", "%d entries, more than the %d one ImageUpdater may have", len(s.ApplicationRefs), MaxRules)
		return nil, errs
	}
	global := layer{"spec.commonUpdateSettings", s.CommonUpdateSettings}
	verifyAt := mergeVerify(verifyState{}, "spec.imagesVerification", s.ImagesVerification)
	var rules []Rule
	seen := map[string]bool{}
	images := 0
	for i := range s.ApplicationRefs {
		ref := &s.ApplicationRefs[i]
		rp := fieldpath.Index("spec.applicationRefs", i)
		// Counted as listed, before any image is read: each costs a
		// policy compile, and a broken one a problem in the status.
		if images += len(ref.Images); len(ref.Images) > 0 && images > MaxImages {
			errs.invalid(fieldpath.Join(rp, "images"), "%d images with the applicationRefs before (%d here): more than the %d one ImageUpdater may list; this applicationRef is left out unread",
				images, len(ref.Images), MaxImages)
			continue
		}
		r, ok := translateRef(rp, u.Metadata.Namespace, s, ref, global, verifyAt, &errs)
		if seen[ref.NamePattern] {
			errs.invalid(fieldpath.Join(rp, "namePattern"), "%q is used by another applicationRef (namePattern is the list's key)", ref.NamePattern)
			ok = false
		}
		seen[ref.NamePattern] = true
		if ok {
			rules = append(rules, r)
		}
	}
	slices.SortStableFunc(rules, func(a, b Rule) int { return cmp.Compare(b.specificity, a.specificity) })
	return rules, errs
}

// translateRef merges and checks one applicationRef; ok is false when the
// whole ref must be left out.
func translateRef(rp, namespace string, s *Spec, ref *AppRef, global layer, verifyAt verifyState, errs *problems) (Rule, bool) {
	r := Rule{Path: rp, Namespace: namespace, NamePattern: ref.NamePattern, specificity: specificity(ref)}
	ok := true
	if ref.NamePattern == "" {
		errs.invalid(fieldpath.Join(rp, "namePattern"), "required")
		ok = false
	} else if n := len(ref.NamePattern); n > maxPatternBytes {
		// Matched against every Application of the namespace.
		errs.invalid(fieldpath.Join(rp, "namePattern"), "%d bytes, over the %d-byte limit", n, maxPatternBytes)
		ok = false
	} else if _, err := path.Match(ref.NamePattern, ""); err != nil {
		errs.invalid(fieldpath.Join(rp, "namePattern"), "invalid glob %q: %v", ref.NamePattern, err)
		ok = false
	}
	if ref.LabelSelectors != nil {
		sel, err := metav1.LabelSelectorAsSelector(ref.LabelSelectors)
		if err != nil {
			errs.invalid(fieldpath.Join(rp, "labelSelectors"), "%v", err)
			ok = false
		} else {
			r.selector, r.LabelSelector = sel, sel.String()
		}
	}
	if ref.UseAnnotations != nil && *ref.UseAnnotations {
		r.UseAnnotations = true
		// argocd-image-updater reads the applicationRef's own
		// imagesVerification for annotated images, not the spec's.
		own := mergeVerify(verifyState{}, fieldpath.Join(rp, "imagesVerification"), ref.ImagesVerification)
		if key, bad := own.key(errs, "the images of the Applications' annotations are not updated"); bad != "" {
			r.Unverified = bad
		} else {
			r.Verify = key
		}
		return r, ok
	}
	if len(ref.Images) == 0 {
		errs.invalid(fieldpath.Join(rp, "images"), "required unless useAnnotations is true")
		ok = false
	}
	wb, fields, wbOK, noWrite := mergeWriteBack(rp, s.WriteBackConfig, ref.WriteBackConfig, errs)
	r.WriteBack, r.WriteBackFields, r.NoWrite = wb, fields, noWrite
	ok = ok && wbOK
	refLayer := layer{fieldpath.Join(rp, "commonUpdateSettings"), ref.CommonUpdateSettings}
	refVerify := mergeVerify(verifyAt, fieldpath.Join(rp, "imagesVerification"), ref.ImagesVerification)
	aliases := map[string]bool{}
	for j := range ref.Images {
		ip := fieldpath.Index(fieldpath.Join(rp, "images"), j)
		img, imgOK := translateImage(ip, &ref.Images[j], []layer{global, refLayer}, refVerify, errs)
		if a := ref.Images[j].Alias; aliases[a] && a != "" {
			errs.invalid(fieldpath.Join(ip, "alias"), "%q names two images of the applicationRef (alias is the list's key)", a)
			imgOK = false
		}
		aliases[ref.Images[j].Alias] = true
		if imgOK {
			r.Images = append(r.Images, img)
		}
	}
	return r, ok
}

// Problem is one problem with a field of the resource. A resource is not
// a file: there are no lines to point at.
type Problem struct {
	config.FieldError
	// Ignored says nothing is left out: the field is ignored as
	// argocd-image-updater ignores it, and crowsnest says so.
	Ignored bool
}

// problems collects the resource's problems, each naming its field.
type problems []Problem

func (p *problems) invalid(field, format string, args ...any) {
	*p = append(*p, Problem{FieldError: config.FieldError{Path: field, Msg: fmt.Sprintf(format, args...)}})
}

// ignored says the field is ignored, as argocd-image-updater ignores it.
func (p *problems) ignored(field, format string, args ...any) {
	*p = append(*p, Problem{FieldError: config.FieldError{Path: field, Msg: fmt.Sprintf(format, args...)}, Ignored: true})
}

// layer is one level of commonUpdateSettings and its field path.
type layer struct {
	path string
	s    *UpdateSettings
}

// translateImage merges the settings layers under one image and checks
// what config can check; ok is false when the image must be left out.
func translateImage(ip string, im *Image, layers []layer, verifyAt verifyState, errs *problems) (RuleImage, bool) {
	out := RuleImage{Path: ip, Fields: map[string]string{}}
	ok := true
	fail := func(field, format string, args ...any) {
		errs.invalid(fieldpath.Join(ip, field), format, args...)
		ok = false
	}
	switch {
	case im.Alias == "":
		fail("alias", "required")
	case !aliasRE.MatchString(im.Alias):
		fail("alias", "%q: want a letter or digit, then letters, digits, '-' or '_' (at most 63; crowsnest does not take '.' in an alias)", im.Alias)
	}
	out.Alias = im.Alias
	name, constraint := cutConstraint(strings.TrimSpace(im.ImageName))
	switch {
	case name == "":
		fail("imageName", "required")
	case strings.Contains(name, "@"):
		fail("imageName", "%q: want <image>[:<constraint>], no digest", im.ImageName)
	}
	out.Image, out.Constraint = name, constraint
	out.Fields["image"] = fieldpath.Join(ip, "imageName")
	if constraint != "" {
		out.Fields["constraint"] = fieldpath.Join(ip, "imageName")
	}
	layers = append(layers, layer{fieldpath.Join(ip, "commonUpdateSettings"), im.CommonUpdateSettings})
	mergeLayers(&out, layers)
	if !checkSettings(&out, im.Alias, errs) {
		ok = false
	}
	if !translateTargets(ip, im.ManifestTargets, &out, errs) {
		ok = false
	}
	v := mergeVerify(verifyAt, fieldpath.Join(ip, "imagesVerification"), im.ImagesVerification)
	if key, bad := v.key(errs, "the image "+im.Alias+" is not updated"); bad != "" {
		ok = false
	} else {
		out.Verify = key
	}
	return out, ok
}

// mergeLayers applies the settings layers to out in order (later ones
// win), recording each setting's field path in out.Fields.
func mergeLayers(out *RuleImage, layers []layer) {
	for _, l := range layers {
		if l.s == nil {
			continue
		}
		set := func(key, field string) { out.Fields[key] = fieldpath.Join(l.path, field) }
		if v := l.s.UpdateStrategy; v != nil {
			out.Strategy = strings.TrimSpace(*v)
			set("strategy", "updateStrategy")
		}
		if v := l.s.AllowTags; v != nil {
			out.AllowTags = strings.TrimSpace(*v)
			set("allowTags", "allowTags")
		}
		if v := l.s.IgnoreTags; v != nil {
			out.IgnoreTags = v
			set("ignoreTags", "ignoreTags")
		}
		if v := l.s.PullSecret; v != nil {
			out.PullSecret = strings.TrimSpace(*v)
			set("pullSecret", "pullSecret")
		}
		if v := l.s.ForceUpdate; v != nil {
			out.ForceUpdate = *v
			set("forceUpdate", "forceUpdate")
		}
		if v := l.s.Platforms; v != nil {
			out.Platforms = v
			set("platforms", "platforms")
		}
	}
}

// checkSettings checks the merged allowTags size and pullSecret of the
// image alias; false when it must be left out. The strategy, the
// constraint and the tag filters are read by the engine's image reader
// (controller/imageupdate.ReadImage), as the same annotations are: an
// unknown strategy is semver with a warning there, as in
// argocd-image-updater, whichever way it was written.
func checkSettings(out *RuleImage, alias string, errs *problems) bool {
	ok := true
	if n := len(out.AllowTags); n > maxPatternBytes {
		errs.invalid(out.Fields["allowTags"], "%d bytes, over the %d-byte limit; the image %s is not updated", n, maxPatternBytes, alias)
		ok = false
	}
	if out.PullSecret != "" {
		if _, err := config.ParseCredentialRef(out.PullSecret); err != nil {
			errs.invalid(out.Fields["pullSecret"], "%v; the image %s is not updated", err, alias)
			ok = false
		}
	}
	return ok
}

// translateTargets reads manifestTargets: exactly one of helm, kustomize,
// plugin, as the CRD says.
func translateTargets(ip string, t *Targets, out *RuleImage, errs *problems) bool {
	if t == nil {
		return true
	}
	tp := fieldpath.Join(ip, "manifestTargets")
	n := 0
	for _, set := range []bool{t.Helm != nil, t.Kustomize != nil, t.Plugin != nil} {
		if set {
			n++
		}
	}
	if n != 1 {
		errs.invalid(tp, "set exactly one of helm, kustomize or plugin; the image %s is not updated", out.Alias)
		return false
	}
	switch {
	case t.Plugin != nil:
		errs.invalid(fieldpath.Join(tp, "plugin"), "crowsnest does not write Config Management Plugin environment variables; the image %s is not updated", out.Alias)
		return false
	case t.Kustomize != nil:
		if t.Kustomize.Name == nil {
			errs.invalid(fieldpath.Join(fieldpath.Join(tp, "kustomize"), "name"), "required")
			return false
		}
		if strings.TrimSpace(*t.Kustomize.Name) == "" {
			// The CRD takes it; argocd-image-updater then renames
			// nothing (parseImageList skips an empty name).
			return true
		}
		out.KustomizeImageName = strings.TrimSpace(*t.Kustomize.Name)
		out.Fields["kustomizeImageName"] = fieldpath.Join(fieldpath.Join(tp, "kustomize"), "name")
	default:
		hp := fieldpath.Join(tp, "helm")
		// argocd-image-updater lets spec win over name and tag.
		if v := t.Helm.Spec; v != nil && *v != "" {
			out.Helm.ImageSpec = strings.TrimSpace(*v)
			out.Fields["helm.imageSpec"] = fieldpath.Join(hp, "spec")
			return true
		}
		if v := t.Helm.Name; v != nil {
			out.Helm.ImageName = strings.TrimSpace(*v)
			out.Fields["helm.imageName"] = fieldpath.Join(hp, "name")
		}
		if v := t.Helm.Tag; v != nil {
			out.Helm.ImageTag = strings.TrimSpace(*v)
			out.Fields["helm.imageTag"] = fieldpath.Join(hp, "tag")
		}
	}
	return true
}

// cutConstraint cuts "<image>[:<constraint>]": the constraint follows the
// first colon after the last slash, so a registry port stays in the name.
func cutConstraint(ref string) (name, constraint string) {
	slash := strings.LastIndexByte(ref, '/')
	if i := strings.IndexByte(ref[slash+1:], ':'); i >= 0 {
		return ref[:slash+1+i], strings.TrimSpace(ref[slash+1+i+1:])
	}
	return ref, ""
}

// specificity scores an applicationRef as argocd-image-updater 1.x orders
// them: an exact name far above any glob, then a label selector, then
// each selector term, then the pattern's literal characters.
func specificity(ref *AppRef) int {
	p := ref.NamePattern
	score := 0
	if !strings.ContainsAny(p, "*?[]") {
		score += 1_000_000
	}
	score += len(strings.NewReplacer("*", "", "?", "").Replace(charClassRE.ReplaceAllString(p, "")))
	if s := ref.LabelSelectors; s != nil {
		score += 10_000 + 100*(len(s.MatchLabels)+len(s.MatchExpressions))
	}
	return score
}

var charClassRE = regexp.MustCompile(`\[.*?]`)
