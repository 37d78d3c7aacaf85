package imageupdate

import (
	"fmt"
	"strings"
)

// ImageSettings are one image's settings as values rather than annotation
// text: what an argocd-image-updater ImageUpdater resource says for one
// image, its levels already merged. ReadImage reads them exactly as
// FromAnnotations reads the annotations that say the same, without the
// limits of the text form: a constraint may hold spaces, ',' or "||"
// (">=1.0, <2.0"), and an ignore-tags pattern may hold ','.
type ImageSettings struct {
	// Alias names the image; it is required.
	Alias string
	// Name is the image without a tag; Constraint is the version
	// constraint written after it ("" for none), whole.
	Name, Constraint string
	// Values are the settings that are set, by per-image annotation key
	// (KeyStrategy, KeyAllowTags, KeyPullSecret, KeyForceUpdate,
	// KeyHelmImageName, KeyHelmImageTag, KeyHelmImageSpec,
	// KeyKustomizeImage); a key absent is unset.
	Values map[string]string
	// Lists are the list settings that are set (KeyIgnoreTags,
	// KeyPlatforms), one pattern or platform per entry.
	Lists map[string][]string
}

// ReadImage reads one image's settings. Problems are AnnotationErrors
// whose Key is the annotation that would say the same (Prefix +
// "<alias>.<key>", or Prefix + KeyImageList for the name and constraint),
// so that a caller can name its own field; ok is false when the image
// must be left out, as FromAnnotations leaves it out.
func ReadImage(in ImageSettings) (img Image, errs []error, ok bool) {
	fail := func(key string, err error, format string, args ...any) {
		errs = append(errs, &AnnotationError{Key: Prefix + key, Msg: fmt.Sprintf(format, args...), Err: err})
	}
	values := in.Values
	if values == nil {
		values = map[string]string{} // values set is what says "not annotations"
	}
	r := &imageSettings{values: values, lists: in.Lists, fail: fail, hasAlias: true}
	name := strings.TrimSpace(in.Name)
	img, ok = r.start(in.Alias, name, strings.TrimSpace(in.Constraint), name)
	if !ok {
		return Image{}, errs, false
	}
	img, ok = r.read(img)
	return img, errs, ok
}

// ReadWriteBack reads write-back settings given as the annotations that
// say them (KeyWriteBack, KeyWriteTarget, KeyGitBranch, KeyGitRepository,
// each after Prefix), as FromAnnotations reads them: on any error the
// returned Method is empty.
func ReadWriteBack(ann map[string]string) (WriteBack, []error) {
	return readWriteBack(ann)
}
