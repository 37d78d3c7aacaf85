package controller

import (
	"context"
	"log/slog"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/crowsnest-dev/crowsnest/controller/dryrun"
	"github.com/crowsnest-dev/crowsnest/controller/imageupdate"
	"github.com/crowsnest-dev/crowsnest/controller/tenancy"
	"github.com/crowsnest-dev/crowsnest/registry"
	"github.com/crowsnest-dev/crowsnest/watcher"
	"github.com/crowsnest-dev/crowsnest/writeback/git/collect"
	"github.com/crowsnest-dev/crowsnest/writeback/journal"
	"github.com/crowsnest-dev/crowsnest/writeback/kube"
)

// Event reasons on Applications. A Git batch's outcome records the first,
// third and WriteBackRefused too, after the reconcile (RunGit).
const (
	EventImagesUpdated     = "ImagesUpdated"
	EventImageUpdateHeld   = "ImageUpdateHeld"
	EventImageUpdateFailed = "ImageUpdateFailed"
	EventInvalidAnnotation = "InvalidAnnotation"
	EventWriteBackNotWired = "WriteBackUnavailable"
	// EventWriteBackRefused is a write the tenancy rules refused (a Git
	// writer found its file outside what the Application renders from).
	EventWriteBackRefused  = "WriteBackRefused"
	EventPolicyRefused     = "ImagePolicyRefused"
	EventUnsupportedSource = "UnsupportedSource"
	// EventSignatureNotVerified names the tags a signature policy skipped
	// and why (a Warning, said again only when they change).
	EventSignatureNotVerified = "SignatureNotVerified"
	eventTypeNormal           = corev1.EventTypeNormal
	eventTypeWarning          = corev1.EventTypeWarning
	defaultSelectionTimeout   = 2 * time.Minute
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

// Registries are the registry clients and naming rules in force
// (setup.Registries).
type Registries interface {
	// ForPullSecret returns the client of images that name their own
	// credentials.
	ForPullSecret(pullSecret string) *registry.Client
	// Qualify completes an image name written without a registry host.
	Qualify(image string) string
}

// WorkQueue is the engine as the image reconciler sees it (Engine).
type WorkQueue interface {
	// Enqueue puts an Application key on the engine's queue.
	Enqueue(key string)
	// EnqueueAfter puts it there after d (a Git write that failed).
	EnqueueAfter(key string, d time.Duration)
	// InFirstPass reports whether the engine's first pass runs:
	// meanwhile a tag list read earlier in the pass is used however old,
	// so a pass longer than the tag cache lists each repository once.
	InFirstPass() bool
	// App looks an Application up by key; nil when it is gone.
	App(key string) *watcher.App
}

// ProjectWindows are the sync windows in force (WindowSource).
type ProjectWindows interface {
	WindowSet
	// Broken says why an AppProject's sync windows do not compile, nil
	// when they do, as of the last Set (which compiles them).
	Broken(project string) error
}

// PolicySet gives crowsnest's image policies in force (PolicySource).
type PolicySet interface {
	Policies() *imageupdate.Policies
}

// UpdaterSet says what argocd-image-updater's ImageUpdater resources say
// to update in app, and their problems for it; ok is false when none
// selects app (imageupdaters.Set).
type UpdaterSet interface {
	Match(ctx context.Context, app *watcher.App) (spec *imageupdate.Spec, errs []error, ok bool)
}

// Refresher has Argo CD look at the commit an Application's Git write
// pushed, now (kube.Refresher).
type Refresher interface {
	Refresh(ctx context.Context, key string) error
}

// ImageNotifier hears crowsnest's own events on an Application
// (pipeline.Notifier).
type ImageNotifier interface {
	Notifier
	// Announces says whether an image event can become a message now;
	// no write intent is recorded when not.
	Announces() bool
}

// ImageReconciler keeps Applications' images up to date: it reads their
// argocd-image-updater annotations, selects versions from the registry's
// shared caches, decides (windows included) and writes back. It also tells
// the poller which repositories are in use and enqueues the Applications of
// a repository that changed.
type ImageReconciler struct {
	Registry *registry.Client
	// Registries, when set, gives the client of images that name their
	// own credentials (pull-secret) and completes image names written
	// without a registry host as the registries config says, read at
	// every reconcile; nil uses Registry for every image and reads names
	// as Docker Hub's.
	Registries Registries
	// Poller, when set, polls the repositories in use; its Listener is
	// this reconciler (RepoChanged).
	Poller *registry.Poller
	// Queue is the engine as the reconciler sees it: it requeues
	// Applications, says whether the first pass runs and looks
	// Applications up for what the Git batcher reports after the
	// reconcile.
	Queue  WorkQueue
	Writer ImageWriter
	// Windows, when set, gives the sync windows in force (config and
	// AppProjects) and says why an AppProject's do not compile; its
	// Applications' write-backs are then held.
	Windows ProjectWindows
	// Policies, when set, gives crowsnest's image policies in force; nil
	// means annotations only.
	Policies PolicySet
	// ImageUpdaters, when set, says what argocd-image-updater's
	// ImageUpdater resources say to update in an Application. One that
	// selects it decides: the annotations apply only when it says
	// useAnnotations, image policies not at all.
	ImageUpdaters UpdaterSet
	Events        EventRecorder
	// Tally, when set, keeps each Application's last outcome for a
	// single pass's summary (`run --once`).
	Tally *PassTally
	// Git batches Git write-backs; RunGit writes the batches and reports
	// their outcomes.
	Git *collect.Batcher
	// Refresher, when set, has Argo CD look at a pushed commit now
	// (kube.Refresher); a failure is logged, the write stands.
	Refresher Refresher
	// PullRequests, when set, follows the pull requests of pull-request
	// write-backs (RunPullRequests, every PullRequestInterval).
	PullRequests        PullRequestForge
	PullRequestInterval time.Duration
	// Tenancy decides what an Application's annotations may use
	// (credentials, Git repositories); nil enforces the defaults.
	Tenancy *tenancy.Rules
	// Notifier, when set, receives crowsnest's own events (image
	// updated, held, failed) for notification triggers.
	Notifier ImageNotifier
	// Journal records each write before it is made, so that its
	// announcement survives a crash between the write and the notifier
	// recording it; nil turns that off (local mode).
	Journal journal.Store
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

	prs pullRequests

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
	spec, errs := r.specOf(ctx, req.Key, app)
	if spec == nil {
		r.prSettled(req.Key)
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
	if err == nil && selErr == nil && len(errs) == 0 && outcome == OutcomeUpToDate {
		r.prSettled(req.Key)
	}
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
	r.newSaid(saidKey{saidUnverified, key}, "")
	r.prForget(key)
	if err := r.forgetIntent(ctx, key); err != nil {
		r.Log.Warn("forgetting the write intent failed", "app", key, "error", err)
	}
}

func (r *ImageReconciler) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}
