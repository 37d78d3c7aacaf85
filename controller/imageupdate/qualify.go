package imageupdate

import (
	"fmt"

	"github.com/crowsnest-dev/crowsnest/registry/imageref"
)

// Qualify reads each image's reference again through names, which
// completes names written without a registry host as the registries
// config says (its default entry and defaultNamespace: "nginx" may be
// "registry.local/library/nginx"). Only registry lookups change: Name, the
// image as written, stays what Helm parameters and kustomize images
// receive. The images the Application runs (status.summary.images) are
// read through names too when Decide compares them. An image whose
// completed name is not a valid reference is dropped and reported. nil
// names reads names as Docker Hub's ("nginx" is docker.io/library/nginx).
func (s *Spec) Qualify(names func(image string) string) []error {
	if names == nil {
		return nil
	}
	s.names = names
	var errs []error
	kept := make([]Image, 0, len(s.Images))
	for i := range s.Images {
		img := s.Images[i]
		ref, err := imageref.Parse(names(img.Name))
		if err != nil {
			msg := fmt.Sprintf("image %q as the registries config completes it: %v", img.Name, err)
			if s.Source == SourceAnnotations {
				errs = append(errs, &AnnotationError{Key: Prefix + KeyImageList, Msg: msg, Err: err})
			} else {
				errs = append(errs, fmt.Errorf("%s: %s", s.Source, msg))
			}
			continue
		}
		ref.Tag, ref.Digest = img.Ref.Tag, img.Ref.Digest
		img.Ref = ref
		kept = append(kept, img)
	}
	s.Images = kept
	return errs
}

// parseRunning parses an image the Application runs the way spec's images
// were read.
func (s *Spec) parseRunning(image string) (imageref.Image, error) {
	if s.names != nil {
		image = s.names(image)
	}
	return imageref.Parse(image)
}
