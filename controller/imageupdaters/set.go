package imageupdaters

import (
	"errors"
	"log/slog"
	"maps"
	"slices"
	"sync"

	"github.com/crowsnest-dev/crowsnest/config/imageupdater"
	"github.com/crowsnest-dev/crowsnest/controller/imageupdate"
	"github.com/crowsnest-dev/crowsnest/watcher"
)

// Set holds the ImageUpdaters in force and answers, for one Application,
// what they say to update in it. Its Match is the image reconciler's
// ImageUpdaters hook; the watcher fills it, the status writer reads it.
type Set struct {
	// Check applies the tenancy rules for annotations to a spec (the
	// reconciler's Tenancy.CheckAnnotations): whoever writes an
	// ImageUpdater in a namespace is as trusted as whoever writes the
	// annotations of the Applications there, no more. Checking here lets
	// each refusal name the resource's field.
	Check   func(app *watcher.App, spec *imageupdate.Spec) []error
	Log     *slog.Logger
	Metrics *Metrics

	mu        sync.RWMutex
	resources map[string]*resource // namespace/name -> compiled
	// byNamespace are the resources of each namespace, by name.
	byNamespace map[string][]*resource
	// appProblems are per resource and Application key the problems
	// last found for that Application (tenancy refusals).
	appProblems map[string]map[string][]error
	// updates are per resource the image updates made for it.
	updates map[string]*updates
	// changed is signalled (never blocking) when the set or a problem
	// changes, for the status writer.
	changed chan struct{}
}

func (s *Set) init() {
	if s.resources == nil {
		s.resources = map[string]*resource{}
		s.appProblems = map[string]map[string][]error{}
		s.updates = map[string]*updates{}
		s.changed = make(chan struct{}, 1)
	}
}

// Changed is signalled when the status of some resource may have changed.
func (s *Set) Changed() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.init()
	return s.changed
}

func (s *Set) signal() {
	select {
	case s.changed <- struct{}{}:
	default:
	}
}

// Apply compiles an ImageUpdater read from the apiserver and puts it in
// force. parseErr, when set, says the object had fields this crowsnest
// does not know (a newer CRD): it is reported with the problems, and the
// fields it knows are used.
func (s *Set) Apply(u *imageupdater.Resource, parseErr error) {
	res := compile(u)
	if parseErr != nil {
		res.problems = append([]error{&FieldError{Resource: res.key, Path: "spec", Msg: parseErr.Error() + "; those fields are ignored"}}, res.problems...)
	}
	s.mu.Lock()
	s.init()
	prev := s.resources[res.key]
	s.resources[res.key] = res
	s.index()
	s.mu.Unlock()
	if prev == nil || prev.generation != res.generation || problemText(prev.problems, 1000) != problemText(res.problems, 1000) {
		s.report(res)
	}
	s.signal()
}

// report says a resource's problems: a log line each, the metric.
func (s *Set) report(res *resource) {
	s.Metrics.problems(res.key, len(res.problems))
	for _, p := range res.problems {
		s.Log.Warn("invalid ImageUpdater field", "imageupdater", res.key, "error", p)
	}
	s.Log.Info("ImageUpdater in force", "imageupdater", res.key, "generation", res.generation,
		"applicationRefs", len(res.rules), "problems", len(res.problems))
}

// Delete takes the resource namespace/name out of force.
func (s *Set) Delete(key string) {
	s.mu.Lock()
	s.init()
	delete(s.resources, key)
	s.index()
	delete(s.appProblems, key)
	delete(s.updates, key)
	s.mu.Unlock()
	s.Metrics.forget(key)
	s.Log.Info("ImageUpdater removed", "imageupdater", key)
	s.signal()
}

// index rebuilds byNamespace; called with s.mu held.
func (s *Set) index() {
	s.byNamespace = map[string][]*resource{}
	for _, key := range slices.Sorted(maps.Keys(s.resources)) {
		res := s.resources[key]
		s.byNamespace[res.namespace] = append(s.byNamespace[res.namespace], res)
	}
}

// winner returns the resource and rule that decide for app: resources of
// its namespace by name, each's applicationRefs most specific first, the
// first that matches. Called with s.mu held.
func (s *Set) winner(app *watcher.App) (*resource, *rule) {
	for _, res := range s.byNamespace[app.Namespace] {
		for i := range res.rules {
			if res.rules[i].Matches(app.Namespace, app.Name, app.Labels) {
				return res, &res.rules[i]
			}
		}
	}
	return nil, nil
}

// Match is the image reconciler's hook: the spec the ImageUpdaters give
// app and its problems, ok false when none selects it (annotations and
// image policies then apply as without ImageUpdaters). A rule with
// useAnnotations gives the Application's own annotations.
func (s *Set) Match(app *watcher.App) (*imageupdate.Spec, []error, bool) {
	s.mu.RLock()
	res, r := s.winner(app)
	s.mu.RUnlock()
	if res == nil {
		return nil, nil, false
	}
	if r.UseAnnotations {
		spec, errs := imageupdate.FromAnnotations(app.Annotations)
		s.setAppProblems(res.key, app.Key(), nil)
		return spec, errs, true
	}
	if r.images == 0 {
		s.setAppProblems(res.key, app.Key(), nil)
		return nil, nil, true
	}
	// The annotations were read once at compile; read again, the spec is
	// the reconciler's own to change.
	spec, _ := imageupdate.FromAnnotations(r.ann)
	errs := s.checkTenancy(res.key, r, app, spec)
	s.setAppProblems(res.key, app.Key(), errs)
	return spec, errs, true
}

// checkTenancy applies Check to each image and to the write-back, so that
// each refusal names the field it comes from.
func (s *Set) checkTenancy(resKey string, r *rule, app *watcher.App, spec *imageupdate.Spec) []error {
	if s.Check == nil {
		return nil
	}
	var errs []error
	kept := make([]imageupdate.Image, 0, len(spec.Images))
	for i := range spec.Images {
		one := *spec
		one.Images, one.WriteBack = []imageupdate.Image{spec.Images[i]}, imageupdate.WriteBack{}
		refused := s.Check(app, &one)
		if len(one.Images) == 1 {
			kept = append(kept, spec.Images[i])
		}
		img := r.image(spec.Images[i].Alias)
		for _, err := range refused {
			path := img.Path
			var ae *imageupdate.AnnotationError
			if errors.As(err, &ae) {
				switch imageupdate.KeyKind(ae.Key) {
				case imageupdate.KeyPullSecret:
					path = img.Fields["pullSecret"]
				case imageupdate.KeyImageList:
					path = img.Fields["image"]
				}
				errs = append(errs, &FieldError{Resource: resKey, Path: path, Msg: ae.Msg, Err: ae.Err})
				continue
			}
			errs = append(errs, &FieldError{Resource: resKey, Path: path, Msg: err.Error(), Err: err})
		}
	}
	spec.Images = kept
	wbOnly := *spec
	wbOnly.Images = nil
	for _, err := range s.Check(app, &wbOnly) {
		errs = append(errs, r.fieldOf(resKey, err))
	}
	spec.WriteBack = wbOnly.WriteBack
	return errs
}

// image returns the rule's image with alias.
func (r *rule) image(alias string) *imageupdater.RuleImage {
	for i := range r.Images {
		if r.Images[i].Alias == alias {
			return &r.Images[i]
		}
	}
	return &imageupdater.RuleImage{Path: r.Path}
}

func (s *Set) setAppProblems(resKey, appKey string, errs []error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.init()
	m := s.appProblems[resKey]
	if len(errs) == 0 {
		if _, had := m[appKey]; had {
			delete(m, appKey)
			s.signal()
		}
		return
	}
	if m == nil {
		m = map[string][]error{}
		s.appProblems[resKey] = m
	}
	if problemText(m[appKey], 1000) != problemText(errs, 1000) {
		m[appKey] = errs
		s.signal()
	}
}
