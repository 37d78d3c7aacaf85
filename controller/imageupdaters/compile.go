package imageupdaters

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
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
	// Warning says nothing was left out: the field is read as
	// argocd-image-updater reads it (an unknown strategy is semver), or
	// ignored as it ignores it, and crowsnest says so.
	Warning bool
}

// ErrNotUpdated is wrapped by the problems of images an ImageUpdater
// asks for that crowsnest does not update in one Application because
// another ImageUpdater selecting it already does, or writes it another
// way; argocd-image-updater runs each resource on its own and would.
var ErrNotUpdated = errors.New("not updated: another ImageUpdater decides for this Application")

func (e *FieldError) Error() string {
	return "ImageUpdater " + e.Resource + " " + e.Path + ": " + e.Msg
}

func (e *FieldError) Unwrap() error { return e.Err }

// resource is one ImageUpdater, compiled.
type resource struct {
	key        string // namespace/name
	name       string
	namespace  string
	generation int64
	rules      []rule
	// problems are the resource's own (not an Application's): each
	// reported once per generation.
	problems []error
}

// rule is one applicationRef, compiled into the engine's model.
type rule struct {
	imageupdater.Rule
	// spec is what the rule says to update: its good images and its
	// write-back, read as the annotations that say the same are read
	// (imageupdate.ReadImage, ReadWriteBack), tenancy rules included,
	// without the limits of the annotations' text form.
	spec imageupdate.Spec
	// keyPaths maps an annotation key (after the prefix) to the field it
	// stands for.
	keyPaths map[string]string
	// images counts the images in spec.
	images int
}

// compile translates an ImageUpdater into rules. Every problem names the
// field; a broken image or applicationRef is left out, the rest stays.
func compile(u *imageupdater.Resource) *resource {
	res := &resource{key: u.Metadata.Namespace + "/" + u.Metadata.Name, name: u.Metadata.Name,
		namespace: u.Metadata.Namespace, generation: u.Metadata.Generation}
	rules, problems := u.Rules()
	for _, p := range problems {
		res.problems = append(res.problems, &FieldError{Resource: res.key, Path: p.Path, Msg: p.Msg, Warning: p.Ignored})
	}
	for i := range rules {
		r := rule{Rule: rules[i]}
		if !r.UseAnnotations {
			res.problems = append(res.problems, r.build(res.key, u.Metadata.Annotations)...)
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

// prKeys are the pull-request annotations (after imageupdate.OwnPrefix)
// an ImageUpdater's pullRequest says, and the Rule.WriteBackFields key each
// stands for.
var prKeys = map[string]string{
	imageupdate.KeyPullRequest: "pullRequest", imageupdate.KeyPullRequestForge: "pullRequest",
	imageupdate.KeyPullRequestLabels: "pullRequest.labels",
}

// build reads the rule's write-back and each image, and returns what the
// readers refused, by field. ann are the ImageUpdater's annotations:
// crowsnest.dev/pin-digest there pins the digests of every rule (an
// argocd-image-updater resource has no field for it).
func (r *rule) build(resKey string, ann map[string]string) []error {
	r.keyPaths = map[string]string{}
	wb := map[string]string{}
	for key, field := range wbKeys {
		if v := r.writeBackValue(field); v != "" {
			wb[imageupdate.Prefix+key] = v
			r.keyPaths[key] = r.WriteBackFields[field]
		}
	}
	if pr := r.WriteBack.PullRequest; pr != nil {
		// Read as a policy's pull request is: through the annotations
		// that say it, their problems named by the resource's fields.
		maps.Copy(wb, imageupdate.PullRequestAnnotations(imageupdate.PolicyPullRequest(pr)))
		for key, field := range prKeys {
			r.keyPaths[imageupdate.OwnPrefix+key] = cmp.Or(r.WriteBackFields[field], r.WriteBackFields["pullRequest"])
		}
	}
	if v, ok := ann[imageupdate.OwnPrefix+imageupdate.KeyPinDigest]; ok {
		wb[imageupdate.OwnPrefix+imageupdate.KeyPinDigest] = v
		r.keyPaths[imageupdate.OwnPrefix+imageupdate.KeyPinDigest] = "metadata.annotations[" + imageupdate.OwnPrefix + imageupdate.KeyPinDigest + "]"
	}
	r.spec = imageupdate.Spec{Source: imageupdate.SourceAnnotations}
	var problems []error
	for j := range r.Images {
		img := &r.Images[j]
		in, paths := imageSettings(img)
		got, errs, ok := imageupdate.ReadImage(in)
		for _, err := range errs {
			var ae *imageupdate.AnnotationError
			path := img.Path
			if errors.As(err, &ae) && paths[strings.TrimPrefix(ae.Key, imageupdate.Prefix)] != "" {
				path = paths[strings.TrimPrefix(ae.Key, imageupdate.Prefix)]
			}
			msg := err.Error()
			if ae != nil {
				msg = ae.Msg
			}
			problems = append(problems, &FieldError{Resource: resKey, Path: path, Msg: msg, Err: errors.Unwrap(err), Warning: ok})
		}
		if !ok {
			continue
		}
		for k, p := range paths {
			if k != imageupdate.KeyImageList {
				r.keyPaths[k] = p
			}
		}
		r.spec.Images = append(r.spec.Images, got)
	}
	r.images = len(r.spec.Images)
	if r.images == 0 {
		return problems
	}
	// The write-back is the same for every image: said once, and only
	// when there is an image to write.
	var errs []error
	r.spec.WriteBack, errs = imageupdate.ReadWriteBack(wb)
	for _, err := range errs {
		problems = append(problems, r.fieldOf(resKey, err))
	}
	if r.NoWrite != "" {
		// Said at compile (a pull request that cannot be honoured); an
		// empty method writes nothing (imageupdate.Decide skips every
		// image).
		r.spec.WriteBack.Method = ""
	}
	if pr := r.spec.WriteBack.PullRequest; pr != nil {
		// The head branch is named the argocd-image-updater way,
		// "image-updater-<8 hex digits>" (controller/gitplan).
		pr.ImageUpdaterHead = true
	}
	return problems
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

// imageSettings are img's settings as the image reader takes them, and
// the field each per-image annotation key ("<alias>.<key>", and
// image-list for the name and constraint) stands for.
func imageSettings(img *imageupdater.RuleImage) (imageupdate.ImageSettings, map[string]string) {
	in := imageupdate.ImageSettings{Alias: img.Alias, Name: img.Image, Constraint: img.Constraint,
		Values: map[string]string{}, Lists: map[string][]string{}}
	paths := map[string]string{imageupdate.KeyImageList: img.Fields["image"]}
	a := imageupdate.OptionAlias(img.Alias) + "."
	set := func(field, key, value string) {
		if p, ok := img.Fields[field]; ok {
			in.Values[key] = value
			paths[a+key] = p
		}
	}
	list := func(field, key string, value []string) {
		if p, ok := img.Fields[field]; ok {
			in.Lists[key] = value
			paths[a+key] = p
		}
	}
	set("strategy", imageupdate.KeyStrategy, img.Strategy)
	set("allowTags", imageupdate.KeyAllowTags, img.AllowTags)
	list("ignoreTags", imageupdate.KeyIgnoreTags, img.IgnoreTags)
	set("pullSecret", imageupdate.KeyPullSecret, img.PullSecret)
	list("platforms", imageupdate.KeyPlatforms, img.Platforms)
	set("forceUpdate", imageupdate.KeyForceUpdate, strconv.FormatBool(img.ForceUpdate))
	set("helm.imageName", imageupdate.KeyHelmImageName, img.Helm.ImageName)
	set("helm.imageTag", imageupdate.KeyHelmImageTag, img.Helm.ImageTag)
	set("helm.imageSpec", imageupdate.KeyHelmImageSpec, img.Helm.ImageSpec)
	set("kustomizeImageName", imageupdate.KeyKustomizeImage, img.KustomizeImageName)
	return in, paths
}

// fieldOf maps an error about the spec read from r's annotations to the
// field it stands for.
func (r *rule) fieldOf(resKey string, err error) error {
	var ae *imageupdate.AnnotationError
	if !errors.As(err, &ae) {
		return &FieldError{Resource: resKey, Path: r.Path, Msg: err.Error(), Err: err}
	}
	// Keys under imageupdate.OwnPrefix (a pull request's) are kept whole.
	path := r.keyPaths[strings.TrimPrefix(ae.Key, imageupdate.Prefix)]
	if path == "" {
		path = r.Path
	}
	return &FieldError{Resource: resKey, Path: path, Msg: ae.Msg, Err: ae.Err, Warning: ae.Ignored()}
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
