package pipeline

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"
	"k8s.io/client-go/util/workqueue"

	"github.com/crowsnest-dev/crowsnest/config"
	"github.com/crowsnest-dev/crowsnest/internal/backoff"
	"github.com/crowsnest-dev/crowsnest/internal/redact"
	"github.com/crowsnest-dev/crowsnest/notify"
	"github.com/crowsnest-dev/crowsnest/notify/outbox"
	"github.com/crowsnest-dev/crowsnest/notify/render"
	"github.com/crowsnest-dev/crowsnest/triggers"
	"github.com/crowsnest-dev/crowsnest/watcher"
)

// Notifier defaults. Up to 512 workers evaluate different Applications at
// once (each a goroutine while it works, none while the queue is empty):
// evaluation is microseconds, each worker waits on two store writes per
// message (the outbox record, then the trigger state), and the writes of
// concurrent workers share one ConfigMap write per shard (group commit),
// so more workers mean bigger batches, not more requests. A wave of a
// thousand synced Applications was announced at about 20 messages a second
// with 4 workers, 90 with 32 and 150 with 128 (bench round 5); since a
// message goes out while its record is written, a worker waits for two
// writes per observation and 512 keep crowsnest's part of a message's
// latency under 50 ms there (128 let observations queue for seconds). 64 keys per
// Application hold every level condition of the catalog and the last few
// dozen deployed revisions, about 1.3 KB of state. A minute bounds the
// reads of argocd-notifications-cm during a reload.
const (
	DefaultWorkers = 512
	// DefaultPruneAfter leaves an informer time to deliver the end of
	// its initial list before states of unseen Applications are dropped.
	DefaultPruneAfter = time.Minute
	DefaultMaxKeys    = 64
	applyTimeout      = time.Minute
)

// ErrNotConfigured is returned by Start before a successful Apply.
var ErrNotConfigured = errors.New("notifier: no config applied")

// Apps is what the notifier asks about the Applications it is handed
// (controller.EngineView: the engine's sources and AppProjects).
type Apps interface {
	// Synced reports whether the sources delivered their initial list.
	// Applications added before are a baseline (recorded, not sent).
	Synced() bool
	// Project returns the AppProject whose subscription annotations apply
	// to app (the one Argo CD goes by), nil when unknown.
	Project(app *watcher.App) *watcher.Project
}

// RepoPolicy refuses a repository an Application may not use
// (tenancy.Rules: its AppProject's sourceRepos, tenancy.gitRepositories).
type RepoPolicy interface {
	CheckRepository(app *watcher.App, repoURL string) error
}

// Setup turns a config's notifications section into what the notifier
// runs (crowsnest run's notifications setup).
type Setup interface {
	// Prepare completes a config's notifications before they are
	// compiled (reads argocd-notifications-cm, resolves secret
	// references). It never changes the section it is given.
	Prepare(ctx context.Context, n *config.Notifications) (*config.Notifications, error)
	// Services builds the senders of a prepared config for the outbox.
	Services(n *config.Notifications) (map[string]notify.Service, error)
}

// Notifier turns observed Application transitions and crowsnest's own
// events into notifications. The engine hands it every transition in the
// order the sources observed it (controller.Engine.Transitions); it
// queues them per Application and returns at once. Its workers evaluate the triggers on
// each transition in order, step the Application's persisted trigger
// state, resolve subscriptions, render templates and enqueue deliveries in
// the outbox under their dedupe key, so that a restart replays nothing
// twice. State is saved after the deliveries are recorded.
type Notifier struct {
	Outbox *outbox.Outbox
	// State persists trigger state; a MemoryState when nil.
	State StateStore
	// Apps answers what the notifier asks about Applications (whether
	// the sources synced, each one's AppProject); without it MarkSynced
	// says when the sources synced and no AppProject is known.
	Apps Apps
	// Setup prepares each config's notifications and builds their
	// senders; nil takes the section as it is and leaves the outbox's
	// services alone.
	Setup Setup
	// Repo answers repo.GetCommitMetadata and repo.GetAppDetails in
	// templates (a *Repo); nil makes them fail the render.
	Repo render.RepoLookup
	// Repos, when set, refuses a repository the Application may not use.
	// A message whose service would act on such a repository with the
	// operator's credentials (svc.Kind.Repository: GitHub's repoURLPath)
	// is not enqueued.
	Repos   RepoPolicy
	Metrics *Metrics
	// PruneAfter is how long after the sources synced the state of
	// Applications not seen since start is deleted.
	PruneAfter time.Duration
	Workers    int
	MaxKeys    int
	Now        func() time.Time
	Log        *slog.Logger

	initOnce sync.Once
	queue    workqueue.TypedRateLimitingInterface[string]
	started  time.Time
	synced   atomic.Bool
	// loadedAt is when Start began loading the saved state (see
	// seqFloor).
	loadedAt time.Time

	cfgMu sync.RWMutex
	cfg   *compiled

	mu      sync.Mutex
	pending map[string][]item
	states  map[string]State
	// seen holds the IDs of Applications observed since start, so that
	// the state of those deleted while crowsnest was down can be pruned.
	seen    map[string]bool
	running bool
}

// item is one observation of one Application, in order.
type item struct {
	// kept and keptPrev are the Application and the one before it while
	// the item waits: compact (watcher.Kept), since a cold start queues
	// one item per Application at once. app and prev are them decoded,
	// while the item is processed.
	kept, keptPrev *watcher.Kept
	app, prev      *watcher.App
	deleted        bool
	// initial marks an Application from the sources' initial list (or
	// created before start): not new, so a baseline on first sight.
	initial bool
	event   *triggers.Event
	// at is when it was observed.
	at time.Time
	// beforeStart marks an observation queued while the notifier did not
	// run (loading its state, or a standby waiting for the lease): the
	// process that led meanwhile may have announced it.
	beforeStart bool
	// seqs holds the level counter each destination's delivery took on
	// the first attempt (by trigger key, service and recipient), so that
	// a retry after a failed state save enqueues the same keys (see
	// freshKey).
	seqs map[string]uint64
}

func (n *Notifier) init() {
	n.initOnce.Do(func() {
		if n.Log == nil {
			n.Log = slog.Default()
		}
		if n.State == nil {
			n.State = &MemoryState{}
		}
		if n.Workers <= 0 {
			n.Workers = DefaultWorkers
		}
		if n.MaxKeys <= 0 {
			n.MaxKeys = DefaultMaxKeys
		}
		if n.Now == nil {
			n.Now = time.Now
		}
		n.started = n.Now().Truncate(time.Second)
		n.pending = map[string][]item{}
		n.seen = map[string]bool{}
		if n.PruneAfter <= 0 {
			n.PruneAfter = DefaultPruneAfter
		}
		limiter := workqueue.NewTypedMaxOfRateLimiter(
			workqueue.NewTypedItemExponentialFailureRateLimiter[string](time.Second, 5*time.Minute),
			&workqueue.TypedBucketRateLimiter[string]{Limiter: rate.NewLimiter(rate.Limit(10), 100)},
		)
		n.queue = workqueue.NewTypedRateLimitingQueueWithConfig(limiter, workqueue.TypedRateLimitingQueueConfig[string]{Name: "notifications"})
	})
}

// MarkSynced says the sources delivered their initial list: Applications
// added from now on are new and get on-created.
func (n *Notifier) MarkSynced() { n.synced.Store(true) }

func (n *Notifier) isSynced() bool {
	if n.Apps != nil {
		return n.Apps.Synced()
	}
	return n.synced.Load()
}

// Apply compiles cfg's notifications and puts them in force; a config
// that does not compile is rejected and the previous one stays.
func (n *Notifier) Apply(cfg *config.Config) error {
	n.init()
	ctx, cancel := context.WithTimeout(context.Background(), applyTimeout)
	defer cancel()
	nc := &cfg.Notifications
	if n.Setup != nil {
		p, err := n.Setup.Prepare(ctx, nc)
		if err != nil {
			return fmt.Errorf("notifications: %w", err)
		}
		nc = p
	}
	c, err := compile(nc)
	if err != nil {
		return fmt.Errorf("notifications: %w", err)
	}
	if n.Setup != nil && n.Outbox != nil {
		svcs, err := n.Setup.Services(&c.set.Config)
		if err != nil {
			return fmt.Errorf("notifications: %w", err)
		}
		n.Outbox.SetServices(svcs)
	}
	n.cfgMu.Lock()
	n.cfg = c
	n.cfgMu.Unlock()
	for _, ig := range nc.Ignored {
		n.Log.Debug("notification setting not used", "key", ig)
	}
	for _, u := range nc.Unsupported {
		n.Log.Warn("notification setting cannot be sent by crowsnest; its deliveries will fail", "key", u)
	}
	if n.Metrics != nil && n.Metrics.unsupported != nil {
		n.Metrics.unsupported.Set(float64(len(nc.Unsupported)))
	}
	return nil
}

// Announces reports whether the notifications in force have a service to
// send to: without one, no event can become a message.
func (n *Notifier) Announces() bool {
	c := n.config()
	return c != nil && len(c.set.Config.Services) > 0
}

func (n *Notifier) config() *compiled {
	n.cfgMu.RLock()
	defer n.cfgMu.RUnlock()
	return n.cfg
}

// OnTransition queues one observed change of an Application; it returns at
// once. controller.Engine.Transitions calls it in the sources' order.
func (n *Notifier) OnTransition(old, cur *watcher.App) {
	n.transition(watcher.KeepApp(old), watcher.KeepApp(cur), false)
}

// transition is OnTransition; initial says the source listed cur in its
// initial list (watcher.AppEvent.Initial).
func (n *Notifier) transition(old, cur *watcher.Kept, initial bool) {
	n.init()
	it := item{kept: cur, keptPrev: old}
	if cur == nil {
		it.kept, it.keptPrev, it.deleted = old, nil, true
	}
	if it.kept == nil {
		return
	}
	if old == nil && cur != nil {
		it.initial = initial || !n.isSynced() || n.createdBefore(cur)
	}
	n.push(it)
}

// OnAppEvent makes the notifier a controller.TransitionListener
// (Engine.Transitions). An
// Application of the informer's initial list is a baseline even when the
// list reaches the handler after the informer reported synced (it did for
// the last of a thousand Applications created a moment before crowsnest
// started, which were then announced as new).
func (n *Notifier) OnAppEvent(ev watcher.AppEvent) {
	if ev.Type == watcher.Resync {
		return // an unchanged object: no transition
	}
	n.transition(ev.KeepOld(), ev.Keep(), ev.Initial)
}

// OnEvent queues one of crowsnest's own events about app; the triggers
// that read `event` evaluate it. Its texts (often an error that names a
// URL) pass through redact.String: templates put them in messages.
func (n *Notifier) OnEvent(app *watcher.App, ev triggers.Event) {
	n.init()
	if app == nil {
		return
	}
	ev.Reason, ev.Message, ev.Window = redact.String(ev.Reason), redact.String(ev.Message), redact.String(ev.Window)
	if ev.Time.IsZero() {
		ev.Time = n.Now()
	}
	n.push(item{kept: watcher.KeepApp(app), event: &ev})
}

// createdBefore reports whether the Application was created before the
// second this Notifier started in (creationTimestamp has no finer grain):
// an informer may deliver part of its initial list after reporting synced,
// and such an Application is not new.
func (n *Notifier) createdBefore(k *watcher.Kept) bool {
	a := k.App()
	if a.Object == nil {
		return false
	}
	ts := a.Object.GetCreationTimestamp()
	return !ts.IsZero() && ts.Time.Before(n.started)
}

func (n *Notifier) push(it item) {
	it.at = n.Now()
	key := it.kept.View().Key()
	n.mu.Lock()
	if n.seen != nil && !it.deleted {
		n.seen[appID(it.kept.View())] = true
	}
	it.beforeStart = !n.running
	added := 1
	if q := n.pending[key]; !n.running && len(q) > 0 && it.event == nil && q[len(q)-1].event == nil {
		// Not started yet (loading state, or a standby waiting for the
		// lease): keep only the latest state, evaluated as a restart
		// would, so a standby holds one item per Application and never
		// replays transitions the leader already announced.
		last := q[len(q)-1]
		it.keptPrev, it.initial = nil, last.initial || it.initial
		q[len(q)-1], added = it, 0
	} else {
		n.pending[key] = append(q, it)
	}
	n.mu.Unlock()
	n.Metrics.addPending(added)
	n.queue.Add(key)
}

// Started reports whether Start loaded the saved state and works the
// queue.
func (n *Notifier) Started() bool {
	n.init()
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.running
}

// Start loads the saved state and works the queue until ctx is cancelled.
func (n *Notifier) Start(ctx context.Context) error {
	n.init()
	// ShutDown also stops the queue's delay loop.
	defer n.queue.ShutDown()
	if n.config() == nil {
		return ErrNotConfigured
	}
	n.mu.Lock()
	n.loadedAt = n.Now()
	n.mu.Unlock()
	if err := n.loadStates(ctx); err != nil {
		return err
	}
	n.mu.Lock()
	n.running = true
	n.mu.Unlock()
	var wg sync.WaitGroup
	wg.Go(func() { n.pruneLater(ctx) })
	wg.Go(func() { n.dispatch(ctx) })
	<-ctx.Done()
	// Drain waits for the keys being worked on; dispatch then hands out
	// what is left (each ends at once, ctx being done) and ends.
	n.queue.ShutDownWithDrain()
	wg.Wait()
	return nil
}

// dispatch hands each key of the queue to a goroutine of its own, at most
// Workers at once, until the queue shuts down. Workers exist only while
// they work: an installation without notifications, or a quiet one, keeps
// no pool of 512 idle goroutines (and their stacks).
func (n *Notifier) dispatch(ctx context.Context) {
	slots := make(chan struct{}, n.Workers)
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		slots <- struct{}{} // a key is taken only when it can be worked on
		key, quit := n.queue.Get()
		if quit {
			return
		}
		wg.Go(func() {
			defer func() { <-slots }()
			n.processKey(ctx, key)
		})
	}
}

func (n *Notifier) loadStates(ctx context.Context) error {
	var err error
	for attempt := 0; ; attempt++ {
		var states map[string]State
		if states, err = n.State.LoadAll(ctx); err == nil {
			n.mu.Lock()
			n.states = states
			n.mu.Unlock()
			return nil
		}
		n.Log.Warn("loading notification state failed; retrying", "error", err, "attempt", attempt+1)
		// A cancelled context stops the loop: the Notifier is stopping,
		// which is no error of loading.
		if backoff.Sleep(ctx, loadRetryDelay(attempt)) != nil {
			return nil //nolint:nilerr // stopping is not a load error
		}
	}
}

// loadRetryDelay is the wait after the attempt-th (from 0) failed load of
// the notification state: 1 s doubled up to 30 s, jittered. (It was
// 1<<attempt seconds capped at 30 s, which overflowed after 34 failures
// and then retried without waiting.)
func loadRetryDelay(attempt int) time.Duration {
	return backoff.Delay(time.Second, 30*time.Second, attempt+1)
}

// processKey works the observations queued for one Application, in order.
func (n *Notifier) processKey(ctx context.Context, key string) {
	defer n.queue.Done(key)
	if ctx.Err() != nil {
		return
	}
	n.mu.Lock()
	items := n.pending[key]
	delete(n.pending, key)
	n.mu.Unlock()
	n.Metrics.addPending(-len(items))
	for i := range items {
		it := &items[i]
		err := n.process(ctx, it)
		it.app, it.prev = nil, nil // compact again, in case it waits for a retry
		if err == nil {
			continue
		}
		// Keep this and later items, in order, ahead of newer ones.
		n.mu.Lock()
		n.pending[key] = append(slices.Clone(items[i:]), n.pending[key]...)
		n.mu.Unlock()
		n.Metrics.addPending(len(items) - i)
		n.Log.Warn("notification processing failed; will retry", "app", key, "error", err)
		n.queue.AddRateLimited(key)
		return
	}
	n.queue.Forget(key)
}

// pruneLater deletes, once the sources synced and PruneAfter passed, the
// state of Applications that were not observed since start: they were
// deleted while crowsnest was down. It keeps the state store bounded.
func (n *Notifier) pruneLater(ctx context.Context) {
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for !n.isSynced() {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
	select {
	case <-ctx.Done():
		return
	case <-time.After(n.PruneAfter):
	}
	n.mu.Lock()
	var stale []string
	for id := range n.states {
		if !n.seen[id] {
			stale = append(stale, id)
		}
	}
	n.mu.Unlock()
	for _, id := range stale {
		if err := n.State.Save(ctx, id, State{}); err != nil {
			n.Log.Warn("pruning notification state failed", "id", id, "error", err)
			continue
		}
		n.mu.Lock()
		if !n.seen[id] {
			delete(n.states, id)
		}
		n.mu.Unlock()
	}
	if len(stale) > 0 {
		n.Log.Info("notification state of deleted applications pruned", "count", len(stale))
	}
}
