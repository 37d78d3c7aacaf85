package collect

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

	gitwb "github.com/crowsnest-dev/crowsnest/writeback/git"
)

// DefaultDelay is how long the batcher collects changes after the
// first one arrives: long enough that a poll cycle's worth of Applications
// sharing a repository lands in one commit, short enough to feel immediate.
const DefaultDelay = 2 * time.Second

// DefaultMaxDelay bounds how long a batch waits past its Delay for
// the engine to settle (Queue.Idle): a busy machine may take longer
// than Delay to decide a poll cycle's Applications, and each decided late
// would otherwise be a commit of its own; a write is never held longer.
const DefaultMaxDelay = 15 * time.Second

// settlePoll is how often a batch past its Delay asks whether the
// engine is still busy.
const settlePoll = 100 * time.Millisecond

// reportTimeout bounds the journal writes that follow a batch's
// report (Listener.GitAnnounced, GitUnchanged); settleWorkers of them run at once,
// so the ConfigMap journal's group commit folds a large batch's into a
// few writes.
const (
	reportTimeout = 30 * time.Second
	settleWorkers = 16
)

// retryDelay is when an Application whose write failed is tried again;
// the writer already retried transient errors within its attempt budget.
const retryDelay = time.Minute

// Applier writes Git changes (gitwb.Writer).
type Applier interface {
	Apply(ctx context.Context, changes []gitwb.Change) ([]gitwb.Result, error)
}

// Event reasons a batch records on Applications (the controller's
// vocabulary: controller.EventImagesUpdated and EventImageUpdateFailed
// are these).
const (
	EventImagesUpdated     = "ImagesUpdated"
	EventImageUpdateFailed = "ImageUpdateFailed"
)

// Results of Metrics.GitUpdates.
const (
	resultSuccess = "success"
	resultError   = "error"
)

// EventRecorder records a Kubernetes Event on an Application (the
// controller's redacting recorder).
type EventRecorder interface {
	Event(object runtime.Object, eventType, reason, message string)
}

// Metrics counts write-back outcomes by result ("success": updates
// written, "error": Applications failed, "refused": Applications whose
// change was outside what they render from).
type Metrics interface {
	GitUpdates(result string, n int)
}

// Tally hears of each Application whose write failed.
type Tally interface {
	GitFailed(key string)
}

// Queue is the engine's work queue as a batch sees it (controller.Engine).
type Queue interface {
	// Idle reports whether no reconcile is queued, running or waiting on
	// a registry. A batch past its Delay waits while it is false, so
	// Applications decided in the same wave land in one commit however
	// loaded the machine is.
	Idle() bool
	// EnqueueAfter reconciles the Application key again after d (its
	// write failed).
	EnqueueAfter(key string, d time.Duration)
}

// Listener hears what a batch did for each Application
// (controller.ImageReconciler).
type Listener interface {
	// GitWritten hears of the updates one commit pushed for key, to
	// announce them (an image-updated notification per update).
	GitWritten(key, commit string, written []gitwb.Update)
	// GitAnnounced hears of each Application whose write was pushed and
	// announced, with the changes written (the controller settles its
	// write intent, so a later process does not announce it again).
	GitAnnounced(ctx context.Context, key string, written []gitwb.Change)
	// GitUnchanged hears of each Application whose changes a batch found
	// already in the repository (the controller announces a write a crash
	// kept from being announced).
	GitUnchanged(ctx context.Context, key string, unchanged []gitwb.Change)
}

// Refresher has Argo CD look at a pushed commit for an Application now
// (kube.Refresher).
type Refresher interface {
	Refresh(ctx context.Context, key string) error
}

// Batcher collects Git write-backs from many reconciles and writes them
// together, one commit per repository and branch per batch. Reconciles do
// not wait for the push; results come back as Events and metrics, and
// failed Applications are requeued.
//
// Results are attributed by the Application's key (namespace/name), which
// Add puts on every change and the writer carries into Result.Keys,
// Update.Key and ChangeError.Key: never by the bare name (two namespaces
// may both hold a "web" writing to one repository) nor by comparing
// repository URLs (a change's URL may carry credentials the result's has
// not; gitwb.RepoID is the one identity when URLs must be compared).
type Batcher struct {
	Writer Applier
	// Delay is the collection window; zero is DefaultDelay.
	Delay time.Duration
	// MaxDelay bounds the collection window when the Queue is busy; zero
	// is DefaultMaxDelay.
	MaxDelay time.Duration
	// Queue, when set, is the engine's work queue: a batch past its Delay
	// waits while it is not Idle (up to MaxDelay), and a failed
	// Application is reconciled again after retryDelay.
	Queue  Queue
	Events EventRecorder
	// Listener, when set, hears what each batch did for each Application
	// (controller.ImageReconciler).
	Listener Listener
	// Refresher, when set, has Argo CD look at a pushed commit now
	// (kube.Refresher); a failure is logged, the write stands.
	Refresher Refresher
	// Metrics, when set, counts the updates written and the
	// Applications failed (controller.ImageMetrics).
	Metrics Metrics
	Log     *slog.Logger
	// Tally, when set, hears of each Application whose write failed (a
	// single pass counts it failed, not updated; controller.PassTally).
	Tally Tally

	mu       sync.Mutex
	pending  map[string][]gitwb.Change // by Application key; the latest wins
	flushing bool
	writing  int // Applications in the batch being written
	wake     chan struct{}
}

// errNoResult fails an Application the writer returned nothing about: it
// is retried rather than silently dropped.
var errNoResult = errors.New("the Git writer returned no result for this Application's changes")

// Idle reports whether nothing is queued or being written.
func (b *Batcher) Idle() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.pending) == 0 && !b.flushing
}

// Pending counts the Applications whose changes wait for the next batch
// or are being written (the crowsnest_git_writeback_pending gauge).
func (b *Batcher) Pending() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.pending) + b.writing
}

// Add queues an Application's changes (one per repository, branch and
// source it writes) for the next batch, replacing what it had queued.
// Each change is keyed by key, whatever Key it had.
func (b *Batcher) Add(key string, chs ...gitwb.Change) {
	own := slices.Clone(chs)
	for i := range own {
		own[i].Key = key
	}
	b.mu.Lock()
	if b.pending == nil {
		b.pending = map[string][]gitwb.Change{}
	}
	if b.wake == nil {
		b.wake = make(chan struct{}, 1)
	}
	b.pending[key] = own
	b.mu.Unlock()
	select {
	case b.wake <- struct{}{}:
	default:
	}
}

// Start writes batches until ctx ends; what is pending then is written
// first, so a shutdown loses nothing that was decided. A push under way
// when ctx ends is given the writer's PushGrace to finish, and one whose
// answer is lost is looked for on the remote, so it is reported by what
// the remote has.
func (b *Batcher) Start(ctx context.Context) error {
	b.mu.Lock()
	if b.wake == nil {
		b.wake = make(chan struct{}, 1)
	}
	wake := b.wake
	b.mu.Unlock()
	delay := b.Delay
	if delay <= 0 {
		delay = DefaultDelay
	}
	for {
		select {
		case <-ctx.Done():
			b.flush(context.WithoutCancel(ctx))
			return nil
		case <-wake:
		}
		if !b.collect(ctx, delay) {
			b.flush(context.WithoutCancel(ctx))
			return nil
		}
		b.flush(ctx)
	}
}

// collect waits out one batch's collection window: delay, then while the
// Queue is not idle, until MaxDelay from the start. It
// reports false when ctx ended first.
func (b *Batcher) collect(ctx context.Context, delay time.Duration) bool {
	maxDelay := b.MaxDelay
	if maxDelay <= 0 {
		maxDelay = DefaultMaxDelay
	}
	maxDelay = max(maxDelay, delay)
	start := time.Now()
	wait := delay
	for {
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return false
		case <-t.C:
		}
		left := maxDelay - time.Since(start)
		if b.Queue == nil || left <= 0 || b.Queue.Idle() {
			return true
		}
		wait = min(settlePoll, left)
	}
}

// flush writes everything pending as one Apply (the writer groups it by
// repository and branch).
func (b *Batcher) flush(ctx context.Context) {
	b.mu.Lock()
	pending := b.pending
	b.pending = nil
	b.flushing, b.writing = len(pending) > 0, len(pending)
	b.mu.Unlock()
	if len(pending) == 0 {
		return
	}
	defer func() {
		b.mu.Lock()
		b.flushing, b.writing = false, 0
		b.mu.Unlock()
	}()
	keys := slices.Sorted(maps.Keys(pending))
	changes := make([]gitwb.Change, 0, len(keys))
	for _, k := range keys {
		changes = append(changes, pending[k]...)
	}
	results, err := b.Writer.Apply(ctx, changes)
	if err != nil && len(results) == 0 {
		// The whole call failed before writing (the writer is not set
		// up to write at all): every Application in it tries again
		// later. Otherwise each result carries its own error: one
		// repository refusing the push, or one change whose branch is
		// unusable (a result of its own), must not fail (and
		// re-announce) the others.
		b.Log.Error("git write-back failed", "apps", len(keys), "error", err)
		for _, k := range keys {
			b.fail(k, err)
		}
		return
	}
	outcomes := map[string]*gitOutcome{}
	for i := range results {
		b.report(&results[i], pending, outcomes)
	}
	b.settle(ctx, keys, pending, outcomes)
}

// settle follows up each Application of a flush by its outcome: one the
// writer said nothing of fails; one written has Argo CD refresh and its
// announcement recorded (Refresher, Listener.GitAnnounced); one found unchanged is
// handed to Listener.GitUnchanged.
func (b *Batcher) settle(ctx context.Context, keys []string, pending map[string][]gitwb.Change, outcomes map[string]*gitOutcome) {
	// What was written is recorded even when ctx ended during the push
	// (a shutdown), within a bound of its own.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), reportTimeout)
	defer cancel()
	var work errgroup.Group
	work.SetLimit(settleWorkers)
	for _, k := range keys {
		o := outcomes[k]
		switch {
		case o == nil:
			b.fail(k, errNoResult)
		case o.failed:
		case o.written:
			if b.Refresher != nil {
				work.Go(func() error {
					if err := b.Refresher.Refresh(ctx, k); err != nil {
						b.Log.Warn("could not ask Argo CD to refresh; it will see the commit at its next poll", "app", k, "error", err)
					}
					return nil
				})
			}
			if b.Listener != nil {
				work.Go(func() error { b.Listener.GitAnnounced(ctx, k, pending[k]); return nil })
			}
		case b.Listener != nil:
			work.Go(func() error { b.Listener.GitUnchanged(ctx, k, pending[k]); return nil })
		}
	}
	_ = work.Wait()
}

// gitOutcome is what one flush did for one Application, over the results
// (repositories and branches) that name it.
type gitOutcome struct{ written, failed bool }

// report hands one result to the Applications it names (res.Keys): each
// hears of its own failure or of its own updates, never another's.
func (b *Batcher) report(res *gitwb.Result, pending map[string][]gitwb.Change, outcomes map[string]*gitOutcome) {
	failed := map[string]error{}
	for _, f := range res.Failed {
		failed[f.Key] = errors.Join(failed[f.Key], f.Err)
	}
	updates := map[string][]gitwb.Update{}
	for _, u := range res.Updates {
		updates[u.Key] = append(updates[u.Key], u)
	}
	repo := gitwb.RepoID(res.RepoURL)
	for _, k := range res.Keys {
		if _, ok := pending[k]; !ok {
			continue
		}
		o := outcomes[k]
		if o == nil {
			o = &gitOutcome{}
			outcomes[k] = o
		}
		switch {
		case res.Err != nil:
			o.failed = true
			b.fail(k, res.Err)
		case failed[k] != nil && onlyRefused(res.Failed, k):
			o.failed = true
			b.refuse(k, failed[k])
		case failed[k] != nil:
			o.failed = true
			b.fail(k, failed[k])
		case len(updates[k]) > 0:
			o.written = true
			ups := updates[k]
			b.count(resultSuccess, len(ups))
			lines := make([]string, len(ups))
			for i, u := range ups {
				lines[i] = fmt.Sprintf("%s: %s -> %s", u.Image, orNone(u.From), u.To)
			}
			msg := fmt.Sprintf("%s (commit %s on %s of %s)", strings.Join(lines, "; "), short(res.CommitSHA), res.Branch, repo)
			b.Log.Info("images updated", "app", k, "method", "git", "commit", res.CommitSHA, "branch", res.Branch, "repo", repo)
			b.event(k, corev1.EventTypeNormal, EventImagesUpdated, msg)
			if b.Listener != nil {
				b.Listener.GitWritten(k, res.CommitSHA, ups)
			}
		}
	}
}

func (b *Batcher) count(result string, n int) {
	if b.Metrics != nil {
		b.Metrics.GitUpdates(result, n)
	}
}

func (b *Batcher) fail(key string, err error) {
	b.count(resultError, 1)
	if b.Tally != nil {
		b.Tally.GitFailed(key)
	}
	b.Log.Warn("git write-back failed; will retry", "app", key, "error", err, "retryIn", retryDelay)
	b.event(key, corev1.EventTypeWarning, EventImageUpdateFailed, "git write-back: "+err.Error())
	if b.Queue != nil {
		b.Queue.EnqueueAfter(key, retryDelay)
	}
}

func (b *Batcher) event(key, typ, reason, msg string) {
	if b.Events == nil {
		return
	}
	ns, name, _ := strings.Cut(key, "/")
	b.Events.Event(&corev1.ObjectReference{APIVersion: "argoproj.io/v1alpha1", Kind: "Application", Namespace: ns, Name: name}, typ, reason, msg)
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

func short(sha string) string {
	if len(sha) > 12 {
		return sha[:12]
	}
	return sha
}
