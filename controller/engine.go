package controller

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"
	"k8s.io/client-go/util/workqueue"

	"github.com/crowsnest-dev/crowsnest/config"
	"github.com/crowsnest-dev/crowsnest/watcher"
)

// TransitionListener sees every Application event in the order the
// sources observed it (pipeline.Notifier.OnAppEvent).
type TransitionListener interface {
	OnAppEvent(ev watcher.AppEvent)
}

// Engine defaults; each can be set on the Engine.
const (
	// DefaultWorkers is the config's default (controller.workers), chosen
	// from the benchmark; an Engine built without a config gets the same.
	DefaultWorkers = config.DefaultWorkers
	// DefaultRetryBaseDelay and DefaultRetryMaxDelay bound the per-key
	// exponential backoff after failed reconciles: quick first retries for
	// blips, then at most one attempt every five minutes for a broken key.
	DefaultRetryBaseDelay = time.Second
	DefaultRetryMaxDelay  = 5 * time.Minute
	// queueName labels the work-queue metrics.
	queueName = "applications"
)

// ErrLeadershipLost is returned by Run when another replica took the lease
// while this one was leading; the process should exit and be restarted.
var ErrLeadershipLost = errors.New("leader election lost")

// Source is where Application events come from (the watcher package).
type Source interface {
	Start(ctx context.Context, h watcher.Handler) error
	// Synced reports whether the source delivered its initial objects;
	// SyncedDone is closed then.
	Synced() bool
	SyncedDone() <-chan struct{}
}

// Request is one unit of work: reconcile the Application with this key.
type Request struct {
	Key string
	// App is the latest observed state, or nil when the Application was deleted.
	App *watcher.App
	// Config is the configuration in force when the reconcile started.
	Config *config.Config
}

// Result tells the engine when to come back to a key that succeeded.
type Result struct {
	RequeueAfter time.Duration
	// Waiting says the reconcile did not finish: it waits, off the
	// queue, for something that will enqueue the key again (a tag list
	// being read). The key does not count as reconciled in the first
	// pass, and the engine is not idle while the Reconciler reports
	// (Waiting() bool) that it waits.
	Waiting bool
}

// Reconciler decides and acts for one Application. The engine never calls it
// concurrently for the same key.
type Reconciler interface {
	Reconcile(ctx context.Context, req Request) (Result, error)
}

// ReconcilerFunc lets a function be a Reconciler.
type ReconcilerFunc func(ctx context.Context, req Request) (Result, error)

// Reconcile calls f.
func (f ReconcilerFunc) Reconcile(ctx context.Context, req Request) (Result, error) {
	return f(ctx, req)
}

// Engine is the sync engine: sources feed a work queue, workers reconcile.
// Set the exported fields, then call Run once.
type Engine struct {
	Sources    []Source
	Reconciler Reconciler
	// Config returns the configuration in force; nil means config.Default().
	Config func() *config.Config
	// Workers is the number of concurrent reconciles; DefaultWorkers if 0.
	Workers        int
	RetryBaseDelay time.Duration
	RetryMaxDelay  time.Duration
	// OnePass reports a failed reconcile without retrying it: a single
	// pass (`run --once`) reports each failure once. The registry client
	// has retried a registry's transient errors already, and a patch its
	// conflicts.
	OnePass bool
	// FirstPassSettle is how long the first pass lasts after each
	// Application known at its start was reconciled once;
	// DefaultFirstPassSettle if 0 (see InFirstPass).
	FirstPassSettle time.Duration
	// LeaderElection, when set, makes only the lease holder reconcile.
	LeaderElection *LeaderElection
	Metrics        *Metrics
	Log            *slog.Logger
	// Transitions, when set, sees every Application event in the order the
	// sources observed it, before the queue coalesces them (notifications
	// evaluate each transition: pipeline.Notifier). It must return
	// quickly.
	Transitions TransitionListener

	initOnce sync.Once
	queue    workqueue.TypedRateLimitingInterface[string]

	mu       sync.RWMutex
	apps     map[string]*watcher.Kept
	projects map[string]*watcher.Project

	synced atomic.Bool
	// workingSince is when the workers first started (unix nanoseconds);
	// firstPassLeft holds the keys known then and not reconciled since,
	// firstPassAllAt when the last of them was; firstPassDone is set once
	// the pass is over (InFirstPass).
	workingSince   atomic.Int64
	firstPassMu    sync.Mutex
	firstPassLeft  map[string]struct{}
	firstPassAllAt atomic.Int64
	firstPassDone  atomic.Bool
	leading        atomic.Bool
	working        atomic.Bool
	inFlight       atomic.Int64
	health         func() error
}

// Idle reports whether the engine has synced and has nothing to do now:
// no key queued, no reconcile running, and none waiting for the
// Reconciler to enqueue it again (Result.Waiting). Keys waiting for a
// later retry or requeue (a window's next boundary) do not count. Local
// mode's --once waits for this.
func (e *Engine) Idle() bool {
	e.init()
	if !e.synced.Load() {
		return false
	}
	// Waiting first: a waiting key is back on the queue before it stops
	// counting as waiting.
	if w, ok := e.Reconciler.(interface{ Waiting() bool }); ok && w.Waiting() {
		return false
	}
	return e.queue.Len() == 0 && e.inFlight.Load() == 0
}

// Working reports whether a reconcile is queued or running: the engine
// is writing, or about to. Unlike Idle it ignores keys waiting for the
// registry, which may wait long without writing anything. The Event sink
// lets writes go first while it reports true.
func (e *Engine) Working() bool {
	e.init()
	return e.queue.Len() > 0 || e.inFlight.Load() > 0
}

// MaxFirstPass bounds how long InFirstPass holds: a first pass that does
// not end stops holding back tag list refreshes after this.
const MaxFirstPass = 10 * time.Minute

// DefaultFirstPassSettle is how long the first pass lasts after every
// Application known at its start was reconciled once: the reconciles its
// own writes cause (each patched Application comes back from the watch)
// belong to it. Five seconds covers the watch's lag on a loaded apiserver
// (bench round 5 saw up to 1.7 s).
const DefaultFirstPassSettle = 5 * time.Second

// InFirstPass reports whether the engine is in its first pass over the
// Applications: from the start until every Application known when it
// started working (leading) was reconciled once, and FirstPassSettle
// after, however busy the engine stays; at most MaxFirstPass after it
// started working. Meanwhile a repository's tag list read by the pass
// serves all of it: reconciles and the poller do not list the tags again
// because the pass outlasted the tag cache or the poll interval (a tag
// pushed meanwhile still arrives by webhook, or with the poll after the
// pass).
func (e *Engine) InFirstPass() bool {
	e.init()
	if e.firstPassDone.Load() {
		return false
	}
	since := e.workingSince.Load()
	if since == 0 {
		return true
	}
	allAt := e.firstPassAllAt.Load()
	if (allAt != 0 && time.Since(time.Unix(0, allAt)) > e.FirstPassSettle) || time.Since(time.Unix(0, since)) > MaxFirstPass {
		e.firstPassDone.Store(true)
		e.Log.Debug("first pass over the Applications done")
		return false
	}
	return true
}

// startFirstPass notes the keys the first pass must reconcile, once.
func (e *Engine) startFirstPass() {
	now := time.Now().UnixNano()
	if !e.workingSince.CompareAndSwap(0, now) {
		return
	}
	e.mu.RLock()
	left := make(map[string]struct{}, len(e.apps))
	for k := range e.apps {
		left[k] = struct{}{}
	}
	e.mu.RUnlock()
	e.firstPassMu.Lock()
	e.firstPassLeft = left
	e.firstPassMu.Unlock()
	if len(left) == 0 {
		e.firstPassAllAt.Store(now)
	}
}

// firstPassReconciled notes that key was reconciled.
func (e *Engine) firstPassReconciled(key string) {
	if e.firstPassAllAt.Load() != 0 {
		return
	}
	e.firstPassMu.Lock()
	defer e.firstPassMu.Unlock()
	if e.firstPassLeft == nil {
		return
	}
	delete(e.firstPassLeft, key)
	if len(e.firstPassLeft) == 0 {
		e.firstPassLeft = nil
		e.firstPassAllAt.Store(time.Now().UnixNano())
	}
}

var _ watcher.Handler = (*Engine)(nil)

func (e *Engine) init() {
	e.initOnce.Do(func() {
		if e.Log == nil {
			e.Log = slog.Default()
		}
		if e.Workers <= 0 {
			e.Workers = DefaultWorkers
		}
		if e.RetryBaseDelay <= 0 {
			e.RetryBaseDelay = DefaultRetryBaseDelay
		}
		if e.FirstPassSettle <= 0 {
			e.FirstPassSettle = DefaultFirstPassSettle
		}
		if e.RetryMaxDelay <= 0 {
			e.RetryMaxDelay = DefaultRetryMaxDelay
		}
		limiter := workqueue.NewTypedMaxOfRateLimiter(
			workqueue.NewTypedItemExponentialFailureRateLimiter[string](e.RetryBaseDelay, e.RetryMaxDelay),
			// An overall bucket so a burst of failures cannot hot-loop the
			// workers: 20 retries/s sustained, 200 at once.
			&workqueue.TypedBucketRateLimiter[string]{Limiter: rate.NewLimiter(rate.Limit(20), 200)},
		)
		cfg := workqueue.TypedRateLimitingQueueConfig[string]{Name: queueName}
		if e.Metrics != nil {
			cfg.MetricsProvider = queueMetrics{e.Metrics}
		}
		e.queue = workqueue.NewTypedRateLimitingQueueWithConfig(limiter, cfg)
		e.apps = map[string]*watcher.Kept{}
		e.projects = map[string]*watcher.Project{}
	})
}

// Run starts the sources, waits for their caches, and reconciles until ctx is
// cancelled (nil) or leadership is lost (ErrLeadershipLost). In-flight
// reconciles finish before Run returns.
func (e *Engine) Run(ctx context.Context) error {
	e.init()
	if e.Reconciler == nil {
		return errors.New("engine: no reconciler")
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	var sources sync.WaitGroup
	srcErr := make(chan error, len(e.Sources))
	for _, s := range e.Sources {
		sources.Go(func() {
			if err := s.Start(ctx, e); err != nil {
				srcErr <- err
				cancel()
			}
		})
	}
	defer sources.Wait()
	defer e.queue.ShutDown()

	if !e.waitSynced(ctx) {
		select {
		case err := <-srcErr:
			return fmt.Errorf("starting sources: %w", err)
		default:
			return nil
		}
	}
	e.synced.Store(true)
	e.Log.Info("engine caches synced", "applications", e.AppCount())

	var err error
	if e.LeaderElection != nil {
		err = e.runElected(ctx)
	} else {
		e.Metrics.setLeader(true)
		e.runWorkers(ctx)
		e.Metrics.setLeader(false)
	}
	select {
	case serr := <-srcErr:
		return fmt.Errorf("application source failed: %w", serr)
	default:
	}
	return err
}

func (e *Engine) waitSynced(ctx context.Context) bool {
	for _, s := range e.Sources {
		select {
		case <-s.SyncedDone():
		case <-ctx.Done():
			return false
		}
	}
	return true
}

// runWorkers reconciles until ctx is cancelled, then shuts the queue down
// and waits for in-flight reconciles.
func (e *Engine) runWorkers(ctx context.Context) {
	e.startFirstPass()
	e.working.Store(true)
	defer e.working.Store(false)
	var wg sync.WaitGroup
	for range e.Workers {
		wg.Go(func() {
			for e.processNext(ctx) {
			}
		})
	}
	<-ctx.Done()
	// Get blocks until an item or shutdown; shutting down with drain wakes
	// idle workers and waits for the busy ones.
	e.queue.ShutDownWithDrain()
	wg.Wait()
}

func (e *Engine) processNext(ctx context.Context) bool {
	key, quit := e.queue.Get()
	if quit {
		return false
	}
	e.inFlight.Add(1)
	defer e.inFlight.Add(-1)
	defer e.queue.Done(key)
	if ctx.Err() != nil {
		// Shutting down: leave the key for the next leader or run.
		return false
	}
	req := Request{Key: key, App: e.App(key), Config: e.currentConfig()}
	start := time.Now()
	res, err := e.reconcileSafely(ctx, req)
	result := e.handleResult(ctx, key, res, err)
	e.Metrics.reconciled(result, time.Since(start).Seconds())
	if result != ResultWaiting {
		e.firstPassReconciled(key)
	}
	return true
}

func (e *Engine) reconcileSafely(ctx context.Context, req Request) (res Result, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("reconciler panicked: %v", r)
		}
	}()
	return e.Reconciler.Reconcile(ctx, req)
}

// handleResult applies the work-loop contract and returns the metric label.
func (e *Engine) handleResult(ctx context.Context, key string, res Result, err error) string {
	switch {
	case err == nil && res.Waiting:
		e.queue.Forget(key)
		return ResultWaiting
	case err == nil && res.RequeueAfter > 0:
		e.queue.Forget(key)
		e.queue.AddAfter(key, res.RequeueAfter)
		return ResultRequeue
	case err == nil:
		e.queue.Forget(key)
		return ResultSuccess
	case IsTerminal(err):
		e.queue.Forget(key)
		e.Log.Error("reconcile failed; not retrying until the application changes", "app", key, "error", err)
		return ResultTerminal
	case ctx.Err() != nil && errors.Is(err, ctx.Err()):
		// Cancelled by shutdown or lost leadership: retry on the next run.
		e.queue.AddRateLimited(key)
		return ResultError
	case e.OnePass:
		e.queue.Forget(key)
		e.Log.Warn("reconcile failed", "app", key, "error", err)
		return ResultError
	default:
		e.queue.AddRateLimited(key)
		e.Log.Warn("reconcile failed; will retry", "app", key, "error", err, "retries", e.queue.NumRequeues(key))
		return ResultError
	}
}

func (e *Engine) currentConfig() *config.Config {
	if e.Config != nil {
		if c := e.Config(); c != nil {
			return c
		}
	}
	return config.Default()
}
