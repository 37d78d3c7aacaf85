package imageupdaters

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/crowsnest-dev/crowsnest/config/imageupdater"
	"github.com/crowsnest-dev/crowsnest/controller/imageupdate"
)

// FieldError is a problem with one field of one ImageUpdater, for one
// Application or for all it selects. It wraps the cause (a tenancy refusal
// is errors.Is(err, tenancy.ErrRefused)).
type FieldError struct {
	// Resource is the ImageUpdater's namespace/name.
	Resource string
	// Path is the field, "spec.applicationRefs[0].images[1].imageName".
	Path string
	Msg  string
	Err  error
}

func (e *FieldError) Error() string {
	return "ImageUpdater " + e.Resource + " " + e.Path + ": " + e.Msg
}

func (e *FieldError) Unwrap() error { return e.Err }

// resource is one ImageUpdater, compiled.
type resource struct {
	key        string // namespace/name
	namespace  string
	generation int64
	rules      []rule
	// problems are the resource's own (not an Application's): each
	// reported once per generation.
	problems []error
}

// rule is one applicationRef, as the annotations that say the same.
type rule struct {
	imageupdater.Rule
	// ann are the argocd-image-updater annotations equivalent to the
	// rule, only its good images in image-list: a spec read from them is
	// exactly what the same annotations on the Application give, tenancy
	// rules included.
	ann map[string]string
	// keyPaths maps an annotation key (after the prefix) to the field it
	// stands for.
	keyPaths map[string]string
	// images counts the images in ann.
	images int
}

// compile translates an ImageUpdater into rules. Every problem names the
// field; a broken image or applicationRef is left out, the rest stays.
func compile(u *imageupdater.Resource) *resource {
	res := &resource{key: u.Metadata.Namespace + "/" + u.Metadata.Name, namespace: u.Metadata.Namespace, generation: u.Metadata.Generation}
	rules, problems := u.Rules()
	for _, p := range problems {
		res.problems = append(res.problems, &FieldError{Resource: res.key, Path: p.Path, Msg: p.Msg})
	}
	for i := range rules {
		r := rule{Rule: rules[i]}
		if !r.UseAnnotations {
			res.problems = append(res.problems, r.build(res.key)...)
		}
		res.rules = append(res.rules, r)
	}
	return res
}

// wbKeys are the write-back annotations and the Rule.WriteBackFields
// key each stands for.
var wbKeys = map[string]string{
	imageupdate.KeyWriteBack: "method", imageupdate.KeyWriteTarget: "target",
	imageupdate.KeyGitBranch: "branch", imageupdate.KeyGitRepository: "repository",
}

// build fills ann with the rule's write-back and each image that the
// annotation reader accepts, and returns what it refused, by field.
func (r *rule) build(resKey string) []error {
	r.ann, r.keyPaths = map[string]string{}, map[string]string{}
	wb := map[string]string{}
	for key, field := range wbKeys {
		if v := r.writeBackValue(field); v != "" {
			wb[imageupdate.Prefix+key] = v
			r.keyPaths[key] = r.WriteBackFields[field]
		}
	}
	var problems []error
	var list []string
	for j := range r.Images {
		img := &r.Images[j]
		one, paths := imageAnnotations(img)
		one[imageupdate.Prefix+imageupdate.KeyImageList] = imageEntry(img)
		paths[imageupdate.KeyImageList] = img.Fields["image"]
		for k, v := range wb {
			one[k] = v
		}
		spec, errs := imageupdate.FromAnnotations(one)
		// A warning (the reader keeps the image, e.g. platforms ignored
		// with semver) keeps it here too.
		bad := !hasAlias(spec, img.Alias)
		for _, err := range errs {
			var ae *imageupdate.AnnotationError
			if !errors.As(err, &ae) {
				continue
			}
			key := strings.TrimPrefix(ae.Key, imageupdate.Prefix)
			if _, isWB := wbKeys[key]; isWB {
				if j == 0 { // the same for every image: said once
					problems = append(problems, &FieldError{Resource: resKey, Path: r.keyPaths[key], Msg: ae.Msg, Err: ae.Err})
				}
				continue
			}
			path := paths[key]
			if path == "" {
				path = img.Path
			}
			problems = append(problems, &FieldError{Resource: resKey, Path: path, Msg: ae.Msg, Err: ae.Err})
		}
		if bad {
			continue
		}
		for k, v := range one {
			if _, isWB := wbKeys[strings.TrimPrefix(k, imageupdate.Prefix)]; !isWB && k != imageupdate.Prefix+imageupdate.KeyImageList {
				r.ann[k] = v
			}
		}
		for k, p := range paths {
			if k != imageupdate.KeyImageList {
				r.keyPaths[k] = p
			}
		}
		list = append(list, imageEntry(img))
		r.images++
	}
	if len(list) > 0 {
		r.ann[imageupdate.Prefix+imageupdate.KeyImageList] = strings.Join(list, ",")
		for k, v := range wb {
			r.ann[k] = v
		}
	}
	return problems
}

// hasAlias reports whether spec has alias's image.
func hasAlias(spec *imageupdate.Spec, alias string) bool {
	if spec == nil {
		return false
	}
	for i := range spec.Images {
		if spec.Images[i].Alias == alias {
			return true
		}
	}
	return false
}

func (r *rule) writeBackValue(field string) string {
	switch field {
	case "method":
		return r.WriteBack.Method
	case "target":
		return r.WriteBack.Target
	case "branch":
		return r.WriteBack.Branch
	default:
		return r.WriteBack.Repository
	}
}

// imageEntry is the image's image-list entry, "<alias>=<image>[:<constraint>]".
func imageEntry(img *imageupdater.RuleImage) string {
	e := img.Alias + "=" + img.Image
	if img.Constraint != "" {
		e += ":" + img.Constraint
	}
	return e
}

// imageAnnotations are the per-image annotations ("<alias>.<key>") that
// say what img's settings say, and the field each key came from.
func imageAnnotations(img *imageupdater.RuleImage) (map[string]string, map[string]string) {
	ann, paths := map[string]string{}, map[string]string{}
	a := imageupdate.OptionAlias(img.Alias) + "."
	set := func(field, key, value string) {
		if p, ok := img.Fields[field]; ok {
			ann[imageupdate.Prefix+a+key] = value
			paths[a+key] = p
		}
	}
	set("strategy", imageupdate.KeyStrategy, img.Strategy)
	set("allowTags", imageupdate.KeyAllowTags, img.AllowTags)
	set("ignoreTags", imageupdate.KeyIgnoreTags, strings.Join(img.IgnoreTags, ","))
	set("pullSecret", imageupdate.KeyPullSecret, img.PullSecret)
	set("platforms", imageupdate.KeyPlatforms, strings.Join(img.Platforms, ","))
	set("forceUpdate", imageupdate.KeyForceUpdate, strconv.FormatBool(img.ForceUpdate))
	set("helm.imageName", imageupdate.KeyHelmImageName, img.Helm.ImageName)
	set("helm.imageTag", imageupdate.KeyHelmImageTag, img.Helm.ImageTag)
	set("helm.imageSpec", imageupdate.KeyHelmImageSpec, img.Helm.ImageSpec)
	set("kustomizeImageName", imageupdate.KeyKustomizeImage, img.KustomizeImageName)
	return ann, paths
}

// fieldOf maps an error about the spec read from r's annotations to the
// field it stands for.
func (r *rule) fieldOf(resKey string, err error) error {
	var ae *imageupdate.AnnotationError
	if !errors.As(err, &ae) {
		return &FieldError{Resource: resKey, Path: r.Path, Msg: err.Error(), Err: err}
	}
	path := r.keyPaths[strings.TrimPrefix(ae.Key, imageupdate.Prefix)]
	if path == "" {
		path = r.Path
	}
	return &FieldError{Resource: resKey, Path: path, Msg: ae.Msg, Err: ae.Err}
}

// problemText joins problems for a status message, at most limit of them.
func problemText(problems []error, limit int) string {
	var b strings.Builder
	for i, p := range problems {
		if i == limit {
			fmt.Fprintf(&b, "; and %d more", len(problems)-limit)
			break
		}
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(p.Error())
	}
	return b.String()
}
