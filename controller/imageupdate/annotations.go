package imageupdate

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/crowsnest-dev/crowsnest/config"
	"github.com/crowsnest-dev/crowsnest/registry/imageref"
	"github.com/crowsnest-dev/crowsnest/registry/policy"
	"github.com/crowsnest-dev/crowsnest/writeback/git/branchtmpl"
)

// Prefix is argocd-image-updater's annotation prefix, read unchanged.
const Prefix = "argocd-image-updater.argoproj.io/"

// Annotation keys after Prefix. Per-image keys are "<alias>.<key>"; the
// app-wide form of a per-image key applies to images without their own.
const (
	KeyImageList      = "image-list"
	KeyStrategy       = "update-strategy"
	KeyAllowTags      = "allow-tags"
	KeyIgnoreTags     = "ignore-tags"
	KeyPullSecret     = "pull-secret"
	KeyPlatforms      = "platforms"
	KeyForceUpdate    = "force-update"
	KeyHelmImageName  = "helm.image-name"
	KeyHelmImageTag   = "helm.image-tag"
	KeyHelmImageSpec  = "helm.image-spec"
	KeyKustomizeImage = "kustomize.image-name"
	KeyWriteBack      = "write-back-method"
	KeyWriteTarget    = "write-back-target"
	KeyGitBranch      = "git-branch"
	KeyGitRepository  = "git-repository"
)

// AnnotationError is one malformed annotation. Key is the full annotation
// key, so an Event can name exactly what to fix.
type AnnotationError struct {
	Key string
	Msg string
	Err error
}

func (e *AnnotationError) Error() string { return "annotation " + e.Key + ": " + e.Msg }

func (e *AnnotationError) Unwrap() error { return e.Err }

// Ignored reports whether the error only says the annotation is ignored
// (its message ends "; ignored"), as argocd-image-updater ignores it:
// nothing is left out.
func (e *AnnotationError) Ignored() bool { return strings.HasSuffix(e.Msg, "; ignored") }

// SourceAnnotations is Spec.Source for a spec read from an Application's
// annotations, which its owner (maybe another team) writes.
const SourceAnnotations = "annotations"

// ErrNoImageList says an Application carries updater annotations but no
// image-list, so nothing can be updated.
var ErrNoImageList = errors.New("no " + Prefix + KeyImageList + " annotation")

// MaxImages caps the entries of image-list. Each image costs a policy
// compile, registry requests on every poll and entries in the
// Application patch; an annotation author (maybe another team) must not
// make one Application cost thousands of each, or a patch past the
// apiserver's 1.5 MB object limit. argocd-image-updater users list tens
// of images per Application; 200 is far above that and keeps a full
// patch (two Helm parameters per image) within a few hundred KB.
const MaxImages = 200

// maxUnknownKeys caps the unknown-key errors one read reports (each
// becomes an Event and a log line); the rest are counted in one more.
const maxUnknownKeys = 20

// maxQuoted bounds an annotation value quoted in an error: errors become
// Events and log lines on every reconcile, and a value may be 256 KiB.
const maxQuoted = 128

// quote is s quoted, cut at maxQuoted bytes with its length said.
func quote(s string) string {
	if len(s) <= maxQuoted {
		return strconv.Quote(s)
	}
	return fmt.Sprintf("%q... (%d bytes)", s[:maxQuoted], len(s))
}

// OptionAlias is how an alias is spelt in its option keys
// (<alias>.update-strategy, ...): a '/' becomes '_', as
// argocd-image-updater does (ContainerImage.normalizedSymbolicName), since
// an annotation key holds one '/' only, before its name.
func OptionAlias(alias string) string { return strings.ReplaceAll(alias, "/", "_") }

// aliasRE is what an alias may look like: it becomes part of annotation
// keys ("<alias>.update-strategy").
var aliasRE = regexp.MustCompile(`^[A-Za-z0-9](?:[A-Za-z0-9_-]{0,62})$`)

// FromAnnotations reads an Application's argocd-image-updater annotations.
// It returns nil and no errors when the Application has no image-list:
// crowsnest does not manage it. Every malformed annotation is reported;
// an image whose own settings are broken is left out and the others stay,
// while a broken write-back setting leaves WriteBack.Method empty (nothing
// can be written, selection may still be shown).
func FromAnnotations(annotations map[string]string) (*Spec, []error) {
	list, ok := annotations[Prefix+KeyImageList]
	if !ok {
		return nil, nil
	}
	var errs []error
	fail := func(key string, err error, format string, args ...any) {
		errs = append(errs, &AnnotationError{Key: Prefix + key, Msg: fmt.Sprintf(format, args...), Err: err})
	}
	spec := &Spec{Source: SourceAnnotations}
	if n := strings.Count(list, ",") + 1; n > MaxImages {
		fail(KeyImageList, nil, "%d entries, more than the %d an Application may list", n, MaxImages)
		return spec, errs
	}
	seen := map[string]bool{}
	for i, entry := range strings.Split(list, ",") {
		entry = strings.TrimSpace(entry)
		if entry == "" {
			if strings.TrimSpace(list) == "" {
				fail(KeyImageList, nil, "empty")
				break
			}
			fail(KeyImageList, nil, "entry %d is empty", i+1)
			continue
		}
		img, ok := readImage(entry, annotations, func(key string, err error, format string, args ...any) {
			fail(key, err, format, args...)
		})
		if !ok {
			continue
		}
		if seen[img.Alias] {
			fail(KeyImageList, nil, "alias %q is used twice", img.Alias)
			continue
		}
		seen[img.Alias] = true
		spec.Images = append(spec.Images, img)
	}
	wb, wbErrs := readWriteBack(annotations)
	errs = append(errs, wbErrs...)
	spec.WriteBack = wb
	unknown := unknownKeys(annotations)
	for _, k := range unknown[:min(len(unknown), maxUnknownKeys)] {
		if k == KeyPlatforms {
			fail(k, nil, "platforms is read per image only (<alias>.platforms), as argocd-image-updater reads it; ignored")
			continue
		}
		fail(k, nil, "unknown key (not an argocd-image-updater annotation, or an alias not in image-list)")
	}
	if more := len(unknown) - maxUnknownKeys; more > 0 {
		fail(unknown[maxUnknownKeys], nil, "and %d more unknown keys", more)
	}
	for _, k := range unknownOwnKeys(annotations) {
		errs = append(errs, &AnnotationError{Key: OwnPrefix + k, Msg: "unknown key (want one of " + strings.Join(ownWriteBackKeys, ", ") + ")"})
	}
	return spec, errs
}

type failFunc func(key string, err error, format string, args ...any)

// readImage reads one image-list entry and its per-image settings.
func readImage(entry string, ann map[string]string, fail failFunc) (Image, bool) {
	img, r, ok := readEntry(entry, ann, fail)
	if !ok {
		return Image{}, false
	}
	return r.read(img)
}

// imageSettings reads the settings of one image-list entry: its own
// ("<alias>.<key>") or else the app-wide ones, remembering which
// annotation key each came from so that errors name it.
type imageSettings struct {
	ann map[string]string
	// values and lists, when values is set, hold the settings as values
	// (an ImageUpdater's fields) instead of ann: per-image keys only, and
	// lists not joined with ',' (a pattern may hold one).
	values   map[string]string
	lists    map[string][]string
	fail     failFunc
	hasAlias bool
	keyAlias string            // the alias as spelt in option keys
	keyOf    map[string]string // policy field -> annotation key
	bad      bool              // a setting was refused: the image is left out
}

// read reads the settings of img, an entry already parsed.
func (r *imageSettings) read(img Image) (Image, bool) {
	r.readPolicy(&img)
	r.readAccess(&img)
	r.readNames(&img)
	r.dropUnread(&img)
	r.compile(&img)
	return img, !r.bad
}

// readEntry parses "[alias=]image[:constraint]".
func readEntry(entry string, ann map[string]string, fail failFunc) (Image, *imageSettings, bool) {
	alias, ref, hasAlias := strings.Cut(entry, "=")
	if !hasAlias {
		ref, alias = entry, ""
	}
	ref = strings.TrimSpace(ref)
	name, constraint := splitConstraint(ref)
	r := &imageSettings{ann: ann, fail: fail, hasAlias: hasAlias}
	img, ok := r.start(strings.TrimSpace(alias), name, constraint, ref)
	return img, r, ok
}

// start checks an image's name and alias (shown is the text errors
// quote) and makes the Image its settings are read into.
func (r *imageSettings) start(alias, name, constraint, shown string) (Image, bool) {
	parsed, err := imageref.Parse(name)
	if err != nil {
		r.fail(KeyImageList, err, "image %s: %v", quote(shown), err)
		return Image{}, false
	}
	r.keyAlias = OptionAlias(alias)
	if r.hasAlias && !aliasRE.MatchString(r.keyAlias) {
		r.fail(KeyImageList, nil, "alias %s: want letters, digits, '-', '_' or '/' (at most 63)", quote(alias))
		return Image{}, false
	}
	if alias == "" {
		alias = name // the image as written, as argocd-image-updater keys it
	}
	r.keyOf = map[string]string{"constraint": KeyImageList}
	img := Image{Alias: alias, Name: name, Ref: parsed}
	img.Policy.Constraint = constraint
	return img, true
}

// get returns the per-image value, else the app-wide one, and its key.
func (r *imageSettings) get(key string) (string, string, bool) {
	if r.values != nil {
		v, ok := r.values[key]
		return strings.TrimSpace(v), r.keyAlias + "." + key, ok
	}
	if r.hasAlias {
		if v, ok := r.ann[Prefix+r.keyAlias+"."+key]; ok {
			return strings.TrimSpace(v), r.keyAlias + "." + key, true
		}
	}
	v, ok := r.ann[Prefix+key]
	return strings.TrimSpace(v), key, ok
}

// own returns the per-image value of key ("" without an alias).
func (r *imageSettings) own(key string) string {
	if r.values != nil {
		return strings.TrimSpace(r.values[key])
	}
	return strings.TrimSpace(r.ann[Prefix+r.keyAlias+"."+key])
}

// list returns a list setting and its key: per image or app-wide
// (appWide false reads the per-image one only).
func (r *imageSettings) list(key string, appWide bool) ([]string, string, bool) {
	if r.values != nil {
		l, ok := r.lists[key]
		return trimList(l), r.keyAlias + "." + key, ok
	}
	if !appWide {
		v, ok := r.ann[Prefix+r.keyAlias+"."+key]
		return splitList(v), r.keyAlias + "." + key, ok && r.hasAlias
	}
	v, k, ok := r.get(key)
	return splitList(v), k, ok
}

// readPolicy reads the strategy and the tag filters.
func (r *imageSettings) readPolicy(img *Image) {
	if v, k, ok := r.get(KeyStrategy); ok {
		img.Policy.Strategy, r.keyOf["strategy"] = v, k
		if _, err := policy.Compile(img.Ref.Repo(), policy.Spec{Strategy: v, Constraint: "x"}); err != nil && unknownStrategy(err) {
			// argocd-image-updater updates by semver, its default, when
			// the strategy is unknown; crowsnest does too, and says so.
			r.fail(k, nil, "unknown strategy %s: want semver, newest-build, digest or alphabetical; semver is used", quote(v))
			img.Policy.Strategy = ""
		}
	}
	if v, k, ok := r.get(KeyAllowTags); ok {
		img.Policy.AllowTags, r.keyOf["allow-tags"] = v, k
	}
	if l, k, ok := r.list(KeyIgnoreTags, true); ok {
		img.Policy.IgnoreTags, r.keyOf["ignore-tags"] = l, k
	}
	// Platforms are per image only: argocd-image-updater never reads an
	// app-wide platforms annotation (unknownKeys reports one).
	if l, k, ok := r.list(KeyPlatforms, false); ok {
		img.Policy.Platforms, r.keyOf["platforms"] = l, k
	}
}

// readAccess reads the pull secret and force-update.
func (r *imageSettings) readAccess(img *Image) {
	if v, k, ok := r.get(KeyPullSecret); ok && v != "" {
		if _, err := config.ParseCredentials(v); err != nil {
			r.fail(k, err, "%v", err)
			r.bad = true
		}
		img.PullSecret = v
	}
	if v, k, ok := r.get(KeyForceUpdate); ok && v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			r.fail(k, nil, "%s is not true or false", quote(v))
			r.bad = true
		}
		img.ForceUpdate = b
	}
}

// readNames reads the Helm parameter and kustomize image names, which
// are per image only.
func (r *imageSettings) readNames(img *Image) {
	if !r.hasAlias {
		return
	}
	img.Helm.ImageName = r.own(KeyHelmImageName)
	img.Helm.ImageTag = r.own(KeyHelmImageTag)
	img.Helm.ImageSpec = r.own(KeyHelmImageSpec)
	img.KustomizeName = r.own(KeyKustomizeImage)
	if img.Helm.ImageSpec != "" && (img.Helm.ImageName != "" || img.Helm.ImageTag != "") {
		// argocd-image-updater lets image-spec win; say so.
		r.fail(r.keyAlias+"."+KeyHelmImageSpec, nil, "set either helm.image-spec or helm.image-name/helm.image-tag, not both: "+
			"helm.image-spec is used, helm.image-name and helm.image-tag are ignored")
		img.Helm.ImageName, img.Helm.ImageTag = "", ""
	}
}

// dropUnread drops the settings argocd-image-updater does not read for
// the image's strategy.
func (r *imageSettings) dropUnread(img *Image) {
	// argocd-image-updater reads the constraint for semver and digest
	// only; newest-build and alphabetical ignore it ("app:latest" with
	// newest-build is common), so it is dropped rather than refused.
	switch s := strings.ToLower(img.Policy.Strategy); s {
	case "newest-build", "latest", "alphabetical", "name":
		img.Policy.Constraint = ""
	}
	// Platforms filter only the strategies that read metadata
	// (newest-build, digest): argocd-image-updater reads none for semver
	// and alphabetical, so platforms have no effect there (and cost no
	// manifest pulls); crowsnest ignores them too, and says so.
	switch s := strings.ToLower(img.Policy.Strategy); s {
	case "", "semver", "alphabetical", "name":
		if len(img.Policy.Platforms) > 0 {
			r.fail(r.keyOf["platforms"], nil, "platforms have no effect with the %s strategy (as in argocd-image-updater, which reads no image metadata for it); ignored",
				cmp.Or(s, "semver"))
			img.Policy.Platforms = nil
		}
	}
}

// compile reports what the policy compiler refuses, each under the
// annotation key its field came from.
func (r *imageSettings) compile(img *Image) {
	_, err := policy.Compile(img.Ref.Repo(), img.Policy)
	if err == nil {
		return
	}
	for _, e := range unjoin(err) {
		var pe *policy.Error
		if errors.As(e, &pe) {
			field, _, _ := strings.Cut(pe.Field, "[")
			key := r.keyOf[field]
			if key == "" {
				key = KeyImageList
			}
			r.fail(key, pe.Err, "image %q: %s: %s", img.Ref.Repo(), pe.Field, pe.Msg)
		} else {
			r.fail(KeyImageList, e, "image %q: %v", img.Ref.Repo(), e)
		}
	}
	r.bad = true
}

// unknownStrategy reports whether a policy error is about the strategy.
func unknownStrategy(err error) bool {
	for _, e := range unjoin(err) {
		var pe *policy.Error
		if errors.As(e, &pe) && pe.Field == "strategy" {
			return true
		}
	}
	return false
}

// splitConstraint cuts "repo[:constraint]": the constraint follows the
// last colon after the last slash, so a registry port stays in the name.
func splitConstraint(ref string) (name, constraint string) {
	slash := strings.LastIndexByte(ref, '/')
	if i := strings.IndexByte(ref[slash+1:], ':'); i >= 0 {
		return ref[:slash+1+i], strings.TrimSpace(ref[slash+1+i+1:])
	}
	return ref, ""
}

// trimList is l without blank entries, each trimmed; nil when none.
func trimList(l []string) []string {
	var out []string
	for _, p := range l {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

func splitList(s string) []string {
	var out []string
	for p := range strings.SplitSeq(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

func unjoin(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

// readWriteBack reads the write-back annotations; on any error the
// returned Method is empty.
func readWriteBack(ann map[string]string) (WriteBack, []error) {
	var errs []error
	fail := func(key, format string, args ...any) {
		errs = append(errs, &AnnotationError{Key: Prefix + key, Msg: fmt.Sprintf(format, args...)})
	}
	wb := WriteBack{Method: MethodArgoCD}
	switch m := strings.TrimSpace(ann[Prefix+KeyWriteBack]); {
	case m == "" || m == "argocd":
	case m == "git" || m == "git:repocreds":
		wb.Method = MethodGit
		if m == "git:repocreds" {
			wb.GitCredentials = "repocreds"
		}
	case strings.HasPrefix(m, "git:secret:"):
		wb.Method = MethodGit
		ref := strings.TrimPrefix(m, "git:secret:")
		ns, name, hasNS := strings.Cut(ref, "/")
		if !hasNS {
			// "git:secret:<name>" is a Secret in the Application's
			// namespace, as argocd-image-updater reads it
			// (getCredsFromSecret); Spec.ResolveIn fills it in.
			ns, name = "", ref
		}
		if hasNS && !dnsLabelRE.MatchString(ns) || !dnsSubdomainRE.MatchString(name) {
			fail(KeyWriteBack, "%s: want git:secret:<namespace>/<name> or git:secret:<name>", quote(m))
		}
		wb.GitCredentials = "secret:" + ref
	default:
		fail(KeyWriteBack, "unknown method %s: want argocd, git, git:repocreds or git:secret:<namespace>/<name>", quote(m))
	}
	wb.Target = Target{Kind: TargetArgoCDSource}
	var targetIgnored error
	if t, ok := ann[Prefix+KeyWriteTarget]; ok {
		kind, path, _ := strings.Cut(strings.TrimSpace(t), ":")
		switch TargetKind(kind) {
		case TargetKustomization, TargetHelmValues:
			if wb.Method == MethodGit {
				wb.Target = Target{Kind: TargetKind(kind), Path: strings.TrimSpace(path)}
			} else if len(errs) == 0 {
				// argocd-image-updater ignores the target of the argocd
				// method; so does crowsnest, visibly.
				targetIgnored = &AnnotationError{Key: Prefix + KeyWriteTarget, Msg: quote(t) + " needs write-back-method git; ignored"}
			}
		default:
			fail(KeyWriteTarget, "unknown target %s: want kustomization[:<path>] or helmvalues[:<path>]", quote(t))
		}
	}
	if b, ok := ann[Prefix+KeyGitBranch]; ok {
		base, target, hasTarget := strings.Cut(strings.TrimSpace(b), ":")
		wb.Branch = base
		// An empty base is the Application's revision, checked when the
		// change is made (controller's gitChange); the Git writer checks
		// both again with the same branchtmpl functions.
		if base != "" {
			if err := branchtmpl.CheckName(base); err != nil {
				fail(KeyGitBranch, "%v", err)
			}
		}
		if hasTarget {
			if target == "" {
				fail(KeyGitBranch, "%s: the target branch after ':' is empty", quote(b))
			} else if err := branchtmpl.CheckTarget(target); err != nil {
				fail(KeyGitBranch, "target branch: %v", err)
			}
			wb.PushBranch = target
		}
	}
	if r, ok := ann[Prefix+KeyGitRepository]; ok {
		wb.Repository = strings.TrimSpace(r)
		if wb.Repository == "" || strings.ContainsAny(wb.Repository, " \t\n") {
			fail(KeyGitRepository, "%s is not a repository URL", quote(r))
		}
	}
	prErrs, ignored := readPullRequestErrs(ann, &wb)
	errs = append(errs, prErrs...)
	readPinDigest(ann, &wb, func(key, format string, args ...any) {
		errs = append(errs, &AnnotationError{Key: OwnPrefix + key, Msg: fmt.Sprintf(format, args...)})
	})
	if len(errs) > 0 {
		// Nothing is written: a pull request asked for and not readable
		// must not become a push.
		wb.Method = ""
	}
	errs = append(errs, ignored...)
	if targetIgnored != nil {
		errs = append(errs, targetIgnored)
	}
	return wb, errs
}

var (
	dnsLabelRE     = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$`)
	dnsSubdomainRE = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)
)

// knownAppKeys are the keys valid without an alias. platforms is not
// one: argocd-image-updater reads it per image only.
var knownAppKeys = map[string]bool{
	KeyImageList: true, KeyStrategy: true, KeyAllowTags: true, KeyIgnoreTags: true, KeyPullSecret: true,
	KeyForceUpdate: true, KeyWriteBack: true, KeyWriteTarget: true,
	KeyGitBranch: true, KeyGitRepository: true,
}

// knownImageKeys are the keys valid after "<alias>.".
var knownImageKeys = map[string]bool{
	KeyStrategy: true, KeyAllowTags: true, KeyIgnoreTags: true, KeyPullSecret: true, KeyPlatforms: true,
	KeyForceUpdate: true, KeyHelmImageName: true, KeyHelmImageTag: true, KeyHelmImageSpec: true,
	KeyKustomizeImage: true,
}

// unknownKeys returns the updater annotations that nothing reads: a typo
// would otherwise be silently ignored. Settings of an alias that image-list
// declares ("<alias>=<image>") are known even when that entry failed to
// parse; an image listed without alias takes no per-image settings (as in
// argocd-image-updater), so "nginx.update-strategy" for "nginx" is unknown.
func unknownKeys(ann map[string]string) []string {
	declared := listNames(ann[Prefix+KeyImageList])
	var out []string
	for _, full := range slices.Sorted(maps.Keys(ann)) {
		key, ok := strings.CutPrefix(full, Prefix)
		if !ok || knownAppKeys[key] {
			continue
		}
		alias, rest, dotted := strings.Cut(key, ".")
		if dotted && knownImageKeys[rest] && declared[alias] {
			continue
		}
		out = append(out, key)
	}
	return out
}

// listNames returns the aliases image-list declares (even in entries that
// failed to parse), read once rather than once per key.
func listNames(list string) map[string]bool {
	names := map[string]bool{}
	for e := range strings.SplitSeq(list, ",") {
		if a, _, ok := strings.Cut(e, "="); ok {
			names[OptionAlias(strings.TrimSpace(a))] = true
		}
	}
	return names
}

// KeyKind names an annotation key without its alias, for metric labels
// whose values must stay few: "web.update-strategy" is "update-strategy";
// anything unknown is "unknown".
func KeyKind(full string) string {
	key := strings.TrimPrefix(full, Prefix)
	if knownAppKeys[key] {
		return key
	}
	if _, rest, ok := strings.Cut(key, "."); ok && knownImageKeys[rest] {
		return rest
	}
	return "unknown"
}
