package controller

import (
	"context"
	"errors"
	"fmt"

	"github.com/crowsnest-dev/crowsnest/controller/gitplan"
	"github.com/crowsnest-dev/crowsnest/controller/imageupdate"
	"github.com/crowsnest-dev/crowsnest/watcher"
)

// What an Application asks to update (ImageReconciler.Reconcile's first
// step) and whether the tenancy rules let it: the Spec, its checks, and
// the repositories a Git write-back would push to.

// specOf is what app asks to update: an image updater's (ImageUpdaters),
// else its annotations, else a matching image policy its tenancy admits;
// nil when none. errs are the annotations' errors.
func (r *ImageReconciler) specOf(ctx context.Context, key string, app *watcher.App) (spec *imageupdate.Spec, errs []error) {
	spec, errs = imageupdate.FromAnnotations(app.Annotations)
	if r.ImageUpdaters != nil {
		if s, e, ok := r.ImageUpdaters.Match(ctx, app); ok {
			return s, e
		}
	}
	if r.Policies == nil {
		return spec, errs
	}
	// The Application's own annotations win over crowsnest's
	// policies: they are the owner's explicit word on this object.
	ps, name := r.Policies.Policies().Match(app)
	if ps != nil && spec == nil {
		if err := r.Tenancy.AdmitsPolicy(app); err != nil {
			if r.newSaid(saidKey{saidRefused, key}, err.Error()) {
				r.Log.Warn("image policy not applied", "app", key, "policy", name, "error", err)
				r.event(app, eventTypeWarning, EventPolicyRefused, fmt.Sprintf("image policy %s not applied: %v", name, err))
			}
			ps = nil
		}
	}
	if ps != nil && spec == nil {
		spec = ps
	} else if ps != nil {
		r.Log.Debug("annotations win over a matching image policy", "app", key, "policy", name)
	}
	return spec, errs
}

// checkSpec adds to errs what spec gets wrong (names, tenancy) and
// reports them all: as a Warning each when they changed, else at Debug.
func (r *ImageReconciler) checkSpec(app *watcher.App, key string, spec *imageupdate.Spec, errs []error) []error {
	spec.ResolveIn(app.Namespace)
	errs = append(errs, spec.Qualify(r.names())...)
	errs = append(errs, r.Tenancy.CheckAnnotations(app, spec)...)
	if !r.newInvalid(key, errs) {
		for _, err := range errs {
			r.Log.Debug("annotation still invalid", "app", key, "error", err)
		}
		return errs
	}
	for _, err := range errs {
		r.Log.Warn("invalid annotation", "app", key, "error", err)
		r.Metrics.invalidAnnotation(annotationKey(err))
		r.event(app, eventTypeWarning, EventInvalidAnnotation, err.Error())
	}
	return errs
}

func annotationKey(err error) string {
	var ae *imageupdate.AnnotationError
	if errors.As(err, &ae) {
		return imageupdate.KeyKind(ae.Key)
	}
	return "unknown"
}

// checkRepositories applies the tenancy rules to every repository the
// Git write-back of changes would push to.
func (r *ImageReconciler) checkRepositories(app *watcher.App, spec *imageupdate.Spec, changes []imageupdate.Change) error {
	if spec.Source != imageupdate.SourceAnnotations && spec.WriteBack.Repository != "" {
		return nil // an image policy's repository is the operator's word
	}
	chs, err := gitplan.Changes(app, spec, changes)
	if err != nil {
		return nil //nolint:nilerr // the reconcile reports it where it makes the changes
	}
	for i := range chs {
		if err := r.Tenancy.CheckRepository(app, chs[i].RepoURL); err != nil {
			if spec.Source == imageupdate.SourceAnnotations && spec.WriteBack.Repository != "" {
				return fmt.Errorf("annotation %s%s: %w", imageupdate.Prefix, imageupdate.KeyGitRepository, err)
			}
			return fmt.Errorf("spec.source.repoURL: %w", err)
		}
	}
	return nil
}

// names completes image names as the registries config says; nil reads
// them as Docker Hub's.
func (r *ImageReconciler) names() func(image string) string {
	if r.Registries == nil {
		return nil
	}
	return r.Registries.Qualify
}
