package imageupdaters

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/crowsnest-dev/crowsnest/config/imageupdater"
	"github.com/crowsnest-dev/crowsnest/controller/imageupdate"
	"github.com/crowsnest-dev/crowsnest/watcher"
)

// Set holds the ImageUpdaters in force and answers, for one Application,
// what they say to update in it. Its Match is the image reconciler's
// ImageUpdaters hook; the watcher fills it, the status writer reads it.
type Set struct {
	// Tenancy applies the tenancy rules for annotations to a spec (the
	// reconciler's): whoever writes an ImageUpdater in a namespace is as
	// trusted as whoever writes the annotations of the Applications
	// there, no more. Checking here lets each refusal name the resource's
	// field. Nil checks nothing.
	Tenancy Tenancy
	// Secrets reads the Secrets holding imagesVerification's public
	// keys, in each resource's own namespace (what the tenancy rules let
	// its Applications' annotations name too); nil reads none, and the
	// images that ask for verification are not updated.
	Secrets SecretGetter
	Log     *slog.Logger
	Metrics *Metrics

	keyCache  keyCache
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

// Tenancy applies the tenancy rules for annotations to a spec, removing
// what they refuse and returning why (tenancy.Rules).
type Tenancy interface {
	CheckAnnotations(app *watcher.App, spec *imageupdate.Spec) []error
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

// Problems returns the problems of the resource namespace/name's own
// fields, as compiled (not an Application's): what the status and `crowsnest
// migrate` report. nil when the resource is not in force.
func (s *Set) Problems(key string) []error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if res := s.resources[key]; res != nil {
		return slices.Clone(res.problems)
	}
	return nil
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

// match is one resource's say about an Application: the resource and
// its most specific applicationRef that takes the Application.
type match struct {
	res *resource
	r   *rule
	// ann and annErrs are the Application's annotations read, for a
	// useAnnotations rule.
	ann     *imageupdate.Spec
	annErrs []error
	// passed are the annotation problems of useAnnotations rules of the
	// same resource that passed the Application on: still the
	// Application's to fix, and said.
	passed []error
}

// matches returns what every ImageUpdater of app's namespace says about
// it, resources by name: argocd-image-updater reconciles each resource on
// its own, so each one's images are updated. Within a resource its
// applicationRefs are tried most specific first and the first that
// takes app decides; a useAnnotations ref whose annotations give nothing
// to update (no image-list, a broken write-back or force-update) passes
// app on to the next ref, as argocd-image-updater's
// FilterApplicationsForUpdate does. Called with s.mu held (read).
func (s *Set) matches(app *watcher.App) []match {
	var out []match
	for _, res := range s.byNamespace[app.Namespace] {
		var passed []error
		for i := range res.rules {
			r := &res.rules[i]
			if !r.Matches(app.Namespace, app.Name, app.Labels) {
				continue
			}
			m := match{res: res, r: r, passed: passed}
			if r.UseAnnotations {
				m.ann, m.annErrs = imageupdate.FromAnnotations(app.Annotations)
				if !annotationsTake(m.ann, m.annErrs) {
					passed = append(passed, m.annErrs...)
					continue
				}
			}
			out = append(out, m)
			break
		}
	}
	return out
}

// annotationsTake reports whether an Application's annotations, read for
// a useAnnotations applicationRef, take it: argocd-image-updater goes on
// to the next applicationRef when it cannot read the image list, the
// common settings (force-update) or the write-back configuration from them.
func annotationsTake(spec *imageupdate.Spec, errs []error) bool {
	if spec == nil || spec.WriteBack.Method == "" {
		return false
	}
	for _, err := range errs {
		var ae *imageupdate.AnnotationError
		if errors.As(err, &ae) && imageupdate.KeyKind(ae.Key) == imageupdate.KeyForceUpdate {
			return false
		}
	}
	return true
}

// Decision is one ImageUpdater's say about an Application: the resource
// (namespace/name) and the applicationRef (its field path) that decides.
type Decision struct {
	Resource, Path string
	UseAnnotations bool
}

// Deciding returns, for each ImageUpdater that selects app, the
// applicationRef that decides, in the order Match takes them.
func (s *Set) Deciding(app *watcher.App) []Decision {
	s.mu.RLock()
	defer s.mu.RUnlock()
	var out []Decision
	for _, m := range s.matches(app) {
		out = append(out, Decision{Resource: m.res.key, Path: m.r.Path, UseAnnotations: m.r.UseAnnotations})
	}
	return out
}

// Concerns reports whether a problem at the field path p of a resource
// bears on what the applicationRef at ref does: a field under that
// applicationRef, or a spec-wide one (the defaults every ref inherits).
func Concerns(p, ref string) bool {
	if p == ref || strings.HasPrefix(p, ref+".") {
		return true
	}
	return p != "spec.applicationRefs" && !strings.HasPrefix(p, "spec.applicationRefs[")
}

// Match is the image reconciler's hook: the spec the ImageUpdaters give
// app and its problems, ok false when none selects it (annotations and
// image policies then apply as without ImageUpdaters). A rule with
// useAnnotations gives the Application's own annotations. When several
// resources select app, their images are updated together: crowsnest
// writes an Application one way, so a resource whose write-back differs
// from the first one's (by name), or that names an image another resource
// already updates, has those images refused, named on that resource.
func (s *Set) Match(ctx context.Context, app *watcher.App) (*imageupdate.Spec, []error, bool) {
	s.mu.RLock()
	ms := s.matches(app)
	s.mu.RUnlock()
	if len(ms) == 0 {
		return nil, nil, false
	}
	var out *imageupdate.Spec
	var errs []error
	from := map[string]string{} // repository (Ref.Repo: nginx is docker.io/library/nginx) -> the resource that updates it
	var first *match
	for i := range ms {
		m := &ms[i]
		spec, own := s.specOf(ctx, m, app)
		errs = append(errs, m.passed...)
		if spec != nil {
			switch {
			case out == nil || len(out.Images) == 0 && len(spec.Images) > 0:
				// A spec without images (its images refused) still
				// carries its problems to the reconciler.
				out, first = spec, m
				for j := range spec.Images {
					from[spec.Images[j].Ref.Repo()] = m.res.key
				}
			case len(spec.Images) == 0:
			case !spec.WriteBack.Same(out.WriteBack):
				own = append(own, m.conflict("ImageUpdater %s also selects this Application, with another write-back (%s there, %s here); "+
					"crowsnest writes an Application one way, so the images %s are not updated from here",
					first.res.key, describeWB(out.WriteBack), describeWB(spec.WriteBack), aliases(spec.Images)))
			default:
				own = append(own, m.merge(out, spec, from)...)
			}
		}
		errs = append(errs, own...)
		// The resource's status lists its own fields' problems; an
		// Application's annotation problems are the Application's.
		var fields []error
		for _, err := range own {
			if fe := (*FieldError)(nil); errors.As(err, &fe) {
				fields = append(fields, err)
			}
		}
		s.setAppProblems(m.res.key, app.Key(), fields)
	}
	if out == nil && len(errs) > 0 {
		// Nothing to update, but problems to say (a passed-over
		// useAnnotations ref's): the reconciler reports a spec's.
		out = &imageupdate.Spec{Source: imageupdate.SourceAnnotations}
	}
	return out, errs, true
}

// specOf is what one resource says to update in app, and its problems.
func (s *Set) specOf(ctx context.Context, m *match, app *watcher.App) (*imageupdate.Spec, []error) {
	if m.r.UseAnnotations {
		errs := m.annErrs
		if m.ann == nil {
			return nil, errs
		}
		spec := *m.ann
		spec.Images = slices.Clone(m.ann.Images)
		spec.ResolveIn(app.Namespace)
		switch {
		case m.r.Unverified != "":
			// The ref asks for signatures it names no usable key for:
			// the annotations' images are not updated (said on the
			// resource).
			spec.Images = nil
		case m.r.Verify != nil && len(spec.Images) > 0:
			keys, err := s.verifyKeys(ctx, m.res.key, m.res.namespace, m.r.Verify, "the images of the Application's annotations are not updated")
			if err != nil {
				spec.Images = nil
				errs = append(slices.Clone(errs), err)
				break
			}
			for i := range spec.Images {
				spec.Images[i].Verify = keys
			}
		}
		return &spec, errs
	}
	if m.r.images == 0 {
		return nil, nil
	}
	spec := m.r.spec
	spec.Images = slices.Clone(m.r.spec.Images)
	spec.ResolveIn(app.Namespace)
	errs := s.withKeys(ctx, m, &spec)
	errs = append(errs, s.checkTenancy(m.res.key, m.r, app, &spec)...)
	return &spec, errs
}

// withKeys gives each image of spec whose imagesVerification is on the
// public key it names, read from its Secret; an image whose key cannot be
// read is taken out (not updated, never updated unverified), the problem
// naming the field.
func (s *Set) withKeys(ctx context.Context, m *match, spec *imageupdate.Spec) []error {
	var errs []error
	kept := spec.Images[:0]
	for i := range spec.Images {
		img := &spec.Images[i]
		if k := m.r.image(img.Alias).Verify; k != nil {
			keys, err := s.verifyKeys(ctx, m.res.key, m.res.namespace, k, "the image "+img.Alias+" is not updated")
			if err != nil {
				errs = append(errs, err)
				continue
			}
			img.Verify = keys
		}
		kept = append(kept, *img)
	}
	spec.Images = kept
	return errs
}

// merge adds spec's images to out, but for an image another resource
// already updates (which would have two policies pick its version), and
// past the images one Application may have. An alias another resource
// uses is qualified by this resource's name, so results stay apart.
func (m *match) merge(out, spec *imageupdate.Spec, from map[string]string) []error {
	var errs []error
	taken := map[string]bool{}
	for i := range out.Images {
		taken[out.Images[i].Alias] = true
	}
	for i := range spec.Images {
		img := spec.Images[i]
		switch {
		case from[img.Ref.Repo()] != "":
			errs = append(errs, m.imageProblem(img.Alias, "image %s is also updated by ImageUpdater %s, which selects this Application too; it is not updated from here", img.Name, from[img.Ref.Repo()]))
			continue
		case len(out.Images) >= imageupdate.MaxImages:
			errs = append(errs, m.imageProblem(img.Alias, "the ImageUpdaters selecting this Application list more than the %d images an Application may have; not updated", imageupdate.MaxImages))
			continue
		}
		if taken[img.Alias] {
			img.Alias = m.res.name + "/" + img.Alias
		}
		taken[img.Alias] = true
		from[img.Ref.Repo()] = m.res.key
		out.Images = append(out.Images, img)
	}
	return errs
}

// conflict is a problem with this match's whole applicationRef.
func (m *match) conflict(format string, args ...any) error {
	path := m.r.Path
	if p := m.r.WriteBackFields["method"]; p != "" {
		path = p
	}
	return &FieldError{Resource: m.res.key, Path: path, Msg: fmt.Sprintf(format, args...), Err: ErrNotUpdated}
}

// imageProblem is a problem with one of this match's images.
func (m *match) imageProblem(alias, format string, args ...any) error {
	path := m.r.Path
	if !m.r.UseAnnotations {
		path = m.r.image(alias).Path
	}
	return &FieldError{Resource: m.res.key, Path: path, Msg: fmt.Sprintf(format, args...), Err: ErrNotUpdated}
}

// describeWB says a write-back in the words of the annotations.
func describeWB(wb imageupdate.WriteBack) string {
	s := "method " + string(wb.Method)
	if wb.GitCredentials != "" {
		s += ":" + wb.GitCredentials
	}
	if wb.Target.Kind != "" && wb.Target.Kind != imageupdate.TargetArgoCDSource {
		s += ", target " + string(wb.Target.Kind)
		if wb.Target.Path != "" {
			s += ":" + wb.Target.Path
		}
	}
	if wb.Branch != "" || wb.PushBranch != "" {
		s += ", branch " + wb.Branch
		if wb.PushBranch != "" {
			s += ":" + wb.PushBranch
		}
	}
	if wb.Repository != "" {
		s += ", repository " + wb.Repository
	}
	if wb.PullRequest != nil {
		s += ", pull request"
	}
	return s
}

// aliases lists the images' aliases.
func aliases(imgs []imageupdate.Image) string {
	names := make([]string, len(imgs))
	for i := range imgs {
		names[i] = imgs[i].Alias
	}
	return strings.Join(names, ", ")
}

// checkTenancy applies Tenancy to each image and to the write-back, so that
// each refusal names the field it comes from.
func (s *Set) checkTenancy(resKey string, r *rule, app *watcher.App, spec *imageupdate.Spec) []error {
	if s.Tenancy == nil {
		return nil
	}
	var errs []error
	kept := make([]imageupdate.Image, 0, len(spec.Images))
	for i := range spec.Images {
		one := *spec
		one.Images, one.WriteBack = []imageupdate.Image{spec.Images[i]}, imageupdate.WriteBack{}
		refused := s.Tenancy.CheckAnnotations(app, &one)
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
	for _, err := range s.Tenancy.CheckAnnotations(app, &wbOnly) {
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
