package controller

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"github.com/crowsnest-dev/crowsnest/controller/dryrun"
	"github.com/crowsnest-dev/crowsnest/controller/imageupdate"
	"github.com/crowsnest-dev/crowsnest/controller/tenancy"
	"github.com/crowsnest-dev/crowsnest/registry"
	"github.com/crowsnest-dev/crowsnest/registry/policy"
	"github.com/crowsnest-dev/crowsnest/triggers"
	"github.com/crowsnest-dev/crowsnest/watcher"
	"github.com/crowsnest-dev/crowsnest/windows"
	"github.com/crowsnest-dev/crowsnest/writeback/git/collect"
	"github.com/crowsnest-dev/crowsnest/writeback/journal"
	"github.com/crowsnest-dev/crowsnest/writeback/kube"
)

// Event reasons on Applications. The Git batcher records the first,
// third and WriteBackRefused too, after the reconcile.
const (
	EventImagesUpdated      = collect.EventImagesUpdated
	EventImageUpdateHeld    = "ImageUpdateHeld"
	EventImageUpdateFailed  = collect.EventImageUpdateFailed
	EventInvalidAnnotation  = "InvalidAnnotation"
	EventWriteBackNotWired  = "WriteBackUnavailable"
	EventWriteBackRefused   = collect.EventWriteBackRefused
	EventPolicyRefused      = "ImagePolicyRefused"
	EventUnsupportedSource  = "UnsupportedSource"
	eventTypeNormal         = corev1.EventTypeNormal
	eventTypeWarning        = corev1.EventTypeWarning
	defaultSelectionTimeout = 2 * time.Minute
)

// EventRecorder records Kubernetes Events on Applications; it is the one
// method of client-go's record.EventRecorder crowsnest uses.
type EventRecorder interface {
	Event(object runtime.Object, eventType, reason, message string)
}

// ImageWriter writes image overrides into an Application (kube.Writer).
type ImageWriter interface {
	// ApplyFrom writes overrides, starting from cached (the informer's
	// copy of the Application) when it is up to date.
	ApplyFrom(ctx context.Context, namespace, name string, cached *unstructured.Unstructured, overrides []kube.Override) (kube.Result, error)
}

// ImageReconciler keeps Applications' images up to date: it reads their
// argocd-image-updater annotations, selects versions from the registry's
// shared caches, decides (windows included) and writes back. It also tells
// the poller which repositories are in use and enqueues the Applications of
// a repository that changed.
type ImageReconciler struct {
	Registry *registry.Client
	// RegistryFor returns the client for images that name their own
	// credentials (pull-secret); nil uses Registry for every image.
	RegistryFor func(pullSecret string) *registry.Client
	// Names completes image names written without a registry host as the
	// registries config says (default entry, defaultNamespace), read at
	// every reconcile; nil reads them as Docker Hub's.
	Names func(image string) string
	// Poller, when set, polls the repositories in use; wire its OnChange
	// to RepoChanged.
	Poller *registry.Poller
	// FirstPass, when set, reports whether the engine's first pass runs
	// (Engine.InFirstPass): meanwhile a tag list read earlier in the pass
	// is used however old, so a pass longer than the tag cache lists each
	// repository once.
	FirstPass func() bool
	Writer    ImageWriter
	// Windows returns the sync windows in force (config and AppProjects).
	Windows func() windows.Set
	// BrokenProject, when set, says why an AppProject's sync windows do
	// not compile; its Applications' write-backs are then held.
	BrokenProject func(project string) error
	// Policies returns crowsnest's image policies in force; nil means
	// annotations only.
	Policies func() *imageupdate.Policies
	// ImageUpdaters, when set, returns what argocd-image-updater's
	// ImageUpdater resources say to update in app, and their problems
	// for it; ok is false when none selects app. One that selects it
	// decides: the annotations apply only when it says useAnnotations,
	// image policies not at all.
	ImageUpdaters func(app *watcher.App) (spec *imageupdate.Spec, errs []error, ok bool)
	// Enqueue puts an Application key on the engine's queue.
	Enqueue func(key string)
	Events  EventRecorder
	// Tally, when set, keeps each Application's last outcome for a
	// single pass's summary (`run --once`).
	Tally *PassTally
	// Git batches Git write-backs; its Listener is this reconciler
	// (GitWritten, GitAnnounced, GitUnchanged).
	Git *collect.Batcher
	// App looks an Application up by key (Engine.App), for what the Git
	// batcher reports after the reconcile.
	App func(key string) *watcher.App
	// Tenancy decides what an Application's annotations may use
	// (credentials, Git repositories); nil enforces the defaults.
	Tenancy *tenancy.Rules
	// Notify, when set, receives crowsnest's own events (image updated,
	// held, failed) for notification triggers.
	Notify func(app *watcher.App, ev triggers.Event)
	// Journal records each write before it is made, so that its
	// announcement survives a crash between the write and the notifier
	// recording it; nil turns that off (local mode).
	Journal journal.Store
	// Announces, when set, says whether an image event can become a
	// message now (Notifier.Announces); no intent is recorded when not.
	Announces func() bool
	// DryRun decides and logs but writes nothing; each write it would
	// make is planned (by the writers' own code) and handed to Plans.
	DryRun bool
	// Plans, when set, receives the dry run's plans.
	Plans   dryrun.Recorder
	Metrics *ImageMetrics
	Log     *slog.Logger
	Now     func() time.Time

	// WindowMetrics, when set, gets the count of held updates.
	WindowMetrics *WindowMetrics

	mu    sync.Mutex
	repos repoInterests // app key -> repositories it uses -> how to poll them
	// interestsMade counts the changes of repos' union (under mu);
	// interestsGiven is the newest handed to the Poller (under pollMu).
	interestsMade  uint64
	pollMu         sync.Mutex
	interestsGiven uint64
	held           map[string]bool // app keys with an update a window holds
	// said is what was last reported per kind (a hold: its changes and
	// window; the annotation problems) and app key, so each is reported
	// (log, Event, metric) when it appears or changes, not again on every
	// reconcile while it stays.
	said map[saidKey]string
	// intents is the book of Journal (book).
	intents     *journal.Book
	intentsOnce sync.Once
	// selections remembers selections per image, policy and tag list.
	selections selectionMemo
	// tagWaits parks the first pass's reconciles whose tag lists are
	// being read.
	tagWaits tagWaits
}

// saidKey names one kind of report about one Application.
type saidKey struct{ kind, app string }

// Kinds of reports made once (newSaid).
const (
	saidHold    = "hold"
	saidInvalid = "invalid"
	saidRefused = "refused"
	// saidNoCandidate: images whose tag lists hold nothing the policy
	// takes.
	saidNoCandidate = "nocandidate"
	// saidUnsupported: images whose source Argo CD renders as a
	// plain directory.
	saidUnsupported = "unsupported"
)

// Pending reports whether a window holds an update of the Application.
func (r *ImageReconciler) Pending(key string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.held[key]
}

func (r *ImageReconciler) setHeld(key string, held bool) {
	r.mu.Lock()
	if r.held == nil {
		r.held = map[string]bool{}
	}
	if held {
		r.held[key] = true
	} else {
		delete(r.held, key)
		delete(r.said, saidKey{saidHold, key})
	}
	n := len(r.held)
	r.mu.Unlock()
	r.WindowMetrics.setHeld(n)
}

// newInvalid records key's annotation problems and reports whether they
// differ from those last reported; none clears the record.
func (r *ImageReconciler) newInvalid(key string, errs []error) bool {
	msgs := make([]string, len(errs))
	for i, err := range errs {
		msgs[i] = err.Error()
	}
	return r.newSaid(saidKey{saidInvalid, key}, strings.Join(msgs, "\n"))
}

// newHold records what holds key's update and reports whether it differs
// from what was last announced.
func (r *ImageReconciler) newHold(key, what string) bool {
	return r.newSaid(saidKey{saidHold, key}, what)
}

// newSaid records what is to be reported under k and reports whether it
// differs from what was reported last; "" forgets k.
func (r *ImageReconciler) newSaid(k saidKey, what string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if what == "" {
		delete(r.said, k)
		return false
	}
	if r.said == nil {
		r.said = map[saidKey]string{}
	}
	if r.said[k] == what {
		return false
	}
	r.said[k] = what
	return true
}

var _ Reconciler = (*ImageReconciler)(nil)

// Reconcile runs one pass for one Application. An image whose version
// could not be selected because the registry failed (unreachable, 5xx,
// rate limited past the client's retries) makes the reconcile fail after
// the other images are handled, so the engine retries it with backoff:
// the poller reports only changes of a tag set it has seen before, so
// nothing else would come back to it until the informer's resync.
func (r *ImageReconciler) Reconcile(ctx context.Context, req Request) (res Result, err error) {
	if req.App == nil {
		r.forget(ctx, req.Key)
		return Result{}, nil
	}
	app := req.App
	r.Tally.observe(req.Key)
	r.Log.Debug("application observed", "app", req.Key, "resourceVersion", app.ResourceVersion, "project", app.Project,
		"sources", len(app.Sources), "images", len(app.Images),
		"sync", app.SyncStatus, "health", app.HealthStatus)
	spec, errs := r.specOf(req.Key, app)
	if spec == nil {
		r.Tally.forget(req.Key, false)
		r.setRepos(req.Key, nil)
		r.setHeld(req.Key, false)
		r.newInvalid(req.Key, nil)
		return Result{}, nil
	}
	// How this reconcile ended, for a single pass's summary; a reconcile
	// waiting for tag lists comes back and says then.
	outcome := OutcomeUpToDate
	defer func() {
		if err != nil || (len(errs) > 0 && outcome != OutcomeUpdated) {
			outcome = OutcomeFailed
		}
		if !res.Waiting {
			r.Tally.record(req.Key, outcome)
		}
	}()
	errs = r.checkSpec(app, req.Key, spec, errs)
	r.setRepos(req.Key, r.interests(spec))

	results, waiting := r.selectAll(ctx, req.Key, spec)
	if waiting {
		r.Log.Debug("waiting for tag lists off the queue", "app", req.Key)
		return Result{Waiting: true}, nil
	}
	// A selection the registry failed fails the reconcile, after the
	// other images are handled.
	selErr := retryableSelection(spec, results)
	res, outcome, err = r.update(ctx, req.Key, app, spec, results)
	if err == nil {
		err = selErr
	}
	return res, err
}

// forget drops what is kept about an Application that is gone.
func (r *ImageReconciler) forget(ctx context.Context, key string) {
	r.Tally.forget(key, true)
	r.Log.Debug("application gone", "app", key)
	r.setRepos(key, nil)
	r.setHeld(key, false)
	r.newInvalid(key, nil)
	r.newSaid(saidKey{saidRefused, key}, "")
	r.newSaid(saidKey{saidNoCandidate, key}, "")
	if err := r.forgetIntent(ctx, key); err != nil {
		r.Log.Warn("forgetting the write intent failed", "app", key, "error", err)
	}
}

// specOf is what app asks to update: an image updater's (ImageUpdaters),
// else its annotations, else a matching image policy its tenancy admits;
// nil when none. errs are the annotations' errors.
func (r *ImageReconciler) specOf(key string, app *watcher.App) (spec *imageupdate.Spec, errs []error) {
	spec, errs = imageupdate.FromAnnotations(app.Annotations)
	if r.ImageUpdaters != nil {
		if s, e, ok := r.ImageUpdaters(app); ok {
			return s, e
		}
	}
	if r.Policies == nil {
		return spec, errs
	}
	// The Application's own annotations win over crowsnest's
	// policies: they are the owner's explicit word on this object.
	ps, name := r.Policies().Match(app)
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
	errs = append(errs, spec.Qualify(r.Names)...)
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

// checkRepositories applies the tenancy rules to every repository the
// Git write-back of changes would push to.
func (r *ImageReconciler) checkRepositories(app *watcher.App, spec *imageupdate.Spec, changes []imageupdate.Change) error {
	if spec.Source != imageupdate.SourceAnnotations && spec.WriteBack.Repository != "" {
		return nil // an image policy's repository is the operator's word
	}
	chs, err := gitChanges(app, spec, changes)
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

// retryableSelection joins the selection failures of spec's images that
// a later attempt may not repeat. No qualifying tag, a tag list too large
// or whose pages loop, and a policy that does not compile stay as they are until the registry
// or the Application changes, which enqueues the Application anyway.
func retryableSelection(spec *imageupdate.Spec, results map[string]imageupdate.Selection) error {
	var errs []error
	for i := range spec.Images {
		alias := spec.Images[i].Alias
		err := results[alias].Err
		var compile *policy.Error
		if err == nil || errors.Is(err, policy.ErrNoCandidate) || errors.Is(err, registry.ErrTagListTooLarge) || errors.Is(err, registry.ErrTagListLoop) || errors.As(err, &compile) {
			continue
		}
		errs = append(errs, fmt.Errorf("image %s: no version selected: %w", alias, err))
	}
	return errors.Join(errs...)
}

// selectAll runs selection for every image; errors stay per image.
func (r *ImageReconciler) selectAll(ctx context.Context, key string, spec *imageupdate.Spec) (selections map[string]imageupdate.Selection, waiting bool) {
	var maxAge time.Duration // the tag cache's TTL
	if r.FirstPass != nil && r.FirstPass() {
		maxAge = MaxFirstPass
		if r.Enqueue != nil && r.tagWaits.wait(ctx, key, r.tagWants(spec), maxAge, r.Enqueue) {
			return nil, true
		}
	} else {
		r.tagWaits.passOver()
	}
	ctx, cancel := context.WithTimeout(ctx, defaultSelectionTimeout)
	defer cancel()
	out := make(map[string]imageupdate.Selection, len(spec.Images))
	for i := range spec.Images {
		img := &spec.Images[i]
		pol, err := policy.Compile(img.Ref.Repo(), img.Policy)
		if err != nil {
			out[img.Alias] = imageupdate.Selection{Err: err}
			continue
		}
		client := r.clientFor(img)
		tags, err := client.Tags(ctx, img.Ref.Repository, maxAge)
		if err != nil {
			out[img.Alias] = imageupdate.Selection{Err: err}
			continue
		}
		res, err := r.selections.selectTag(ctx, client, img.Ref.Repo(), img.Policy, pol, tags, client.MetadataFunc(img.Ref.Repository, pol.Platforms()))
		out[img.Alias] = imageupdate.Selection{Result: res, Err: err}
		r.Log.Debug("version selected", "app", key, "image", img.Alias, "tag", res.Tag, "error", err)
	}
	return out, false
}

// clientFor is the registry client that reads img: its pull secret's, or
// the shared one.
func (r *ImageReconciler) clientFor(img *imageupdate.Image) *registry.Client {
	if img.PullSecret != "" && r.RegistryFor != nil {
		return r.RegistryFor(img.PullSecret)
	}
	return r.Registry
}

// tagWants lists the tag lists spec's images read (an image whose policy
// does not compile reads none).
func (r *ImageReconciler) tagWants(spec *imageupdate.Spec) []tagWant {
	wants := make([]tagWant, 0, len(spec.Images))
	for i := range spec.Images {
		img := &spec.Images[i]
		if _, err := policy.Compile(img.Ref.Repo(), img.Policy); err != nil {
			continue
		}
		wants = append(wants, tagWant{client: r.clientFor(img), repo: img.Ref.Repository})
	}
	return wants
}

// Waiting reports whether a tag list is being read for Applications that
// wait for it off the queue (Engine.Idle).
func (r *ImageReconciler) Waiting() bool {
	return r.tagWaits.pending()
}

// hold asks the windows whether write-backs are held for app now.
func (r *ImageReconciler) hold(app *watcher.App) imageupdate.Hold {
	if r.Windows == nil {
		return imageupdate.Hold{}
	}
	all := r.Windows()
	if r.BrokenProject != nil {
		if err := r.BrokenProject(app.Project); err != nil {
			return imageupdate.Hold{Held: true, Reason: "AppProject " + app.Project + " has invalid sync windows: " + err.Error()}
		}
	}
	set := all.HoldingUpdates().Matching(WindowRef(app))
	d := set.Decide(WindowRef(app), r.now(), false)
	if d.Allowed {
		return imageupdate.Hold{}
	}
	names := make([]string, 0, len(d.Active)+len(d.Matching))
	for _, w := range d.Active {
		names = append(names, w.Name())
	}
	if len(names) == 0 { // inactive allow windows deny
		for _, w := range d.Matching {
			names = append(names, w.Name())
		}
	}
	return imageupdate.Hold{Held: true, Reason: fmt.Sprintf("%s (%s)", d.Reason, strings.Join(names, ", "))}
}

// nextBoundary is how long until a window matching app opens or closes.
func (r *ImageReconciler) nextBoundary(app *watcher.App) (time.Duration, bool) {
	if r.Windows == nil {
		return 0, false
	}
	now := r.now()
	t, ok := r.Windows().HoldingUpdates().Matching(WindowRef(app)).NextBoundary(now)
	if !ok {
		return 0, false
	}
	return t.Sub(now) + time.Second, true
}

func (r *ImageReconciler) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

// interests says how the poller watches spec's repositories: through the
// client each image's selection reads them with (its pull secret's, or
// the shared one), each a target of its own, so a pull secret that fails
// stops only its own images' polls; and tracking the mutable tag's digest
// for the digest strategy.
func (r *ImageReconciler) interests(spec *imageupdate.Spec) map[registry.Target]registry.Interest {
	out := make(map[registry.Target]registry.Interest, len(spec.Images))
	for i := range spec.Images {
		img := &spec.Images[i]
		t := registry.Target{Repo: img.Ref.Repo()}
		if c := r.clientFor(img); c != r.Registry {
			t.Client = c
		}
		in := out[t]
		if policy.Strategy(img.Policy.Strategy) == policy.StrategyDigest && img.Policy.Constraint != "" &&
			!slices.Contains(in.TrackDigests, img.Policy.Constraint) {
			in.TrackDigests = append(in.TrackDigests, img.Policy.Constraint)
			slices.Sort(in.TrackDigests)
		}
		out[t] = in
	}
	return out
}

// setRepos records the repositories key uses, and how to poll them, and
// hands the union of all to the poller.
func (r *ImageReconciler) setRepos(key string, repos map[registry.Target]registry.Interest) {
	r.mu.Lock()
	interests, changed := r.repos.set(key, repos)
	if changed {
		r.interestsMade++
	}
	made := r.interestsMade
	r.mu.Unlock()
	if !changed || r.Poller == nil {
		return
	}
	// Workers hand their snapshots over in any order: one older than
	// what the poller has would take a newer repository away from it.
	r.pollMu.Lock()
	defer r.pollMu.Unlock()
	if made > r.interestsGiven {
		r.Poller.SetInterests(interests)
		r.interestsGiven = made
	}
}

func sameInterest(a, b registry.Interest) bool {
	return a.Interval == b.Interval && slices.Equal(a.TrackDigests, b.TrackDigests)
}

// RepoChanged enqueues every Application that reads the repository
// through the client that saw the change; it is the poller's OnChange.
// The others' clients are polled on their own and report for them.
func (r *ImageReconciler) RepoChanged(_ context.Context, ch registry.RepoChange) {
	t := registry.Target{Repo: ch.Repo, Client: ch.Client}
	if t.Client == r.Registry {
		t.Client = nil
	}
	r.mu.Lock()
	keys := r.repos.keysOf(t)
	r.mu.Unlock()
	r.Log.Info("repository changed", "repository", ch.Repo, "pull_secret", t.Client != nil, "added", ch.Added, "apps", len(keys))
	for _, k := range keys {
		r.Enqueue(k)
	}
}

func (r *ImageReconciler) event(app *watcher.App, typ, reason, msg string) {
	if r.Events == nil {
		return
	}
	r.Events.Event(&corev1.ObjectReference{
		APIVersion: "argoproj.io/v1alpha1", Kind: "Application",
		Namespace: app.Namespace, Name: app.Name, UID: types.UID(app.UID), ResourceVersion: app.ResourceVersion,
	}, typ, reason, msg)
}

func overridesOf(changes []imageupdate.Change) []kube.Override {
	bySource := map[int]*kube.Override{}
	var order []int
	for i := range changes {
		c := &changes[i]
		o := bySource[c.SourceIndex]
		if o == nil {
			o = &kube.Override{SourceIndex: c.SourceIndex}
			bySource[c.SourceIndex] = o
			order = append(order, c.SourceIndex)
		}
		if c.Kustomize != "" {
			o.KustomizeImages = append(o.KustomizeImages, kube.KustomizeImage{Name: c.KustomizeName, Entry: c.Kustomize})
		}
		o.HelmParameters = append(o.HelmParameters, c.Helm...)
	}
	out := make([]kube.Override, 0, len(order))
	for _, i := range order {
		out = append(out, *bySource[i])
	}
	return out
}

func describeChanges(changes []imageupdate.Change) string {
	parts := make([]string, 0, len(changes))
	for i := range changes {
		c := &changes[i]
		from := c.From
		if from == "" {
			from = "(not deployed)"
		}
		parts = append(parts, fmt.Sprintf("%s: %s -> %s", c.Image, from, c.To))
	}
	return strings.Join(parts, "; ")
}

func annotationKey(err error) string {
	var ae *imageupdate.AnnotationError
	if errors.As(err, &ae) {
		return imageupdate.KeyKind(ae.Key)
	}
	return "unknown"
}

// notifyChanges hands one event per changed image to the notifier. IDs
// are stable for the same change, so a repeated reconcile never sends
// twice (the catalog's event triggers fire once per ID).
func (r *ImageReconciler) notifyChanges(app *watcher.App, typ string, changes []imageupdate.Change, why string) {
	if r.Notify == nil {
		return
	}
	evs := r.changeEvents(app, typ, changes, why)
	for i := range evs {
		r.Notify(app, evs[i])
	}
}

// changeEvents are the events of changes, one per image.
func (r *ImageReconciler) changeEvents(app *watcher.App, typ string, changes []imageupdate.Change, why string) []triggers.Event {
	evs := make([]triggers.Event, 0, len(changes))
	for i := range changes {
		c := &changes[i]
		ev := triggers.Event{Type: typ, Image: c.Image, From: c.From, To: c.To, Time: r.now()}
		ev.ID = strings.Join([]string{typ, app.Namespace, app.Name, c.Image, c.From, c.To}, "|")
		if typ == triggers.EventImageUpdateHeld {
			ev.Window, ev.Reason = why, "SyncWindow"
		} else if why != "" {
			ev.Reason, ev.Message = "WriteFailed", why
			ev.ID += "|" + r.now().Format(time.RFC3339) // each failure is news
		}
		evs = append(evs, ev)
	}
	return evs
}
