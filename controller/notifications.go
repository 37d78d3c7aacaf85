package controller

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
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/util/workqueue"

	"github.com/crowsnest-dev/crowsnest/config"
	"github.com/crowsnest-dev/crowsnest/internal/redact"
	"github.com/crowsnest-dev/crowsnest/notify"
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
	DefaultNotifyWorkers = 512
	// DefaultNotifyPruneAfter leaves an informer time to deliver the end of
	// its initial list before states of unseen Applications are dropped.
	DefaultNotifyPruneAfter = time.Minute
	DefaultNotifyMaxKeys    = 64
	notifyApplyTimeout      = time.Minute
)

// ErrNotifierNotConfigured is returned by Start before a successful Apply.
var ErrNotifierNotConfigured = errors.New("notifier: no config applied")

// Notifier turns observed Application transitions and crowsnest's own
// events into notifications. The engine hands it every transition in the
// order the sources observed it (Engine.Transitions); it queues them per
// Application and returns at once. Its workers evaluate the triggers on
// each transition in order, step the Application's persisted trigger
// state, resolve subscriptions, render templates and enqueue deliveries in
// the outbox under their dedupe key, so that a restart replays nothing
// twice. State is saved after the deliveries are recorded.
type Notifier struct {
	Outbox *notify.Outbox
	// State persists trigger state; a MemoryNotifyState when nil.
	State NotifyStateStore
	// Project returns the AppProject of an Application (its subscription
	// annotations apply), nil when unknown.
	Project func(app *watcher.App) *watcher.Project
	// Synced reports whether the sources delivered their initial list.
	// Applications added before are a baseline (recorded, not sent);
	// without it, MarkSynced says so.
	Synced func() bool
	// Prepare completes a config's notifications before they are compiled
	// (reads argocd-notifications-cm, resolves secret references); nil
	// takes the section as it is.
	Prepare func(ctx context.Context, n *config.Notifications) (*config.Notifications, error)
	// Services builds the senders of a prepared config for the outbox; nil
	// leaves the outbox's services alone.
	Services func(n *config.Notifications) (map[string]notify.Service, error)
	// Repo answers repo.GetCommitMetadata and repo.GetAppDetails in
	// templates (a *NotifyRepo); nil makes them fail the render.
	Repo    render.RepoLookup
	Metrics *NotifierMetrics
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
	cfg   *notifyConfig

	mu      sync.Mutex
	pending map[string][]notifyItem
	states  map[string]NotifyState
	// seen holds the IDs of Applications observed since start, so that
	// the state of those deleted while crowsnest was down can be pruned.
	seen    map[string]bool
	running bool
}

// notifyItem is one observation of one Application, in order.
type notifyItem struct {
	app, prev *watcher.App
	deleted   bool
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
			n.State = &MemoryNotifyState{}
		}
		if n.Workers <= 0 {
			n.Workers = DefaultNotifyWorkers
		}
		if n.MaxKeys <= 0 {
			n.MaxKeys = DefaultNotifyMaxKeys
		}
		if n.Now == nil {
			n.Now = time.Now
		}
		n.started = n.Now().Truncate(time.Second)
		n.pending = map[string][]notifyItem{}
		n.seen = map[string]bool{}
		if n.PruneAfter <= 0 {
			n.PruneAfter = DefaultNotifyPruneAfter
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
	if n.Synced != nil {
		return n.Synced()
	}
	return n.synced.Load()
}

// Apply compiles cfg's notifications and puts them in force; a config
// that does not compile is rejected and the previous one stays.
func (n *Notifier) Apply(cfg *config.Config) error {
	n.init()
	ctx, cancel := context.WithTimeout(context.Background(), notifyApplyTimeout)
	defer cancel()
	nc := &cfg.Notifications
	if n.Prepare != nil {
		p, err := n.Prepare(ctx, nc)
		if err != nil {
			return fmt.Errorf("notifications: %w", err)
		}
		nc = p
	}
	c, err := compileNotifications(nc)
	if err != nil {
		return fmt.Errorf("notifications: %w", err)
	}
	if n.Services != nil && n.Outbox != nil {
		svcs, err := n.Services(&c.set.Config)
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

func (n *Notifier) config() *notifyConfig {
	n.cfgMu.RLock()
	defer n.cfgMu.RUnlock()
	return n.cfg
}

// OnTransition queues one observed change of an Application; it returns at
// once. Engine.Transitions calls it in the sources' order.
func (n *Notifier) OnTransition(old, cur *watcher.App) { n.transition(old, cur, false) }

// transition is OnTransition; initial says the source listed cur in its
// initial list (watcher.AppEvent.Initial).
func (n *Notifier) transition(old, cur *watcher.App, initial bool) {
	n.init()
	it := notifyItem{app: cur, prev: old}
	if cur == nil {
		it.app, it.prev, it.deleted = old, nil, true
	}
	if it.app == nil {
		return
	}
	if old == nil && cur != nil {
		it.initial = initial || !n.isSynced() || n.createdBefore(cur)
	}
	n.push(it)
}

// OnAppEvent adapts OnTransition to Engine.Transitions. An Application of
// the informer's initial list is a baseline even when the list reaches the
// handler after the informer reported synced (it did for the last of a
// thousand Applications created a moment before crowsnest started, which
// were then announced as new).
func (n *Notifier) OnAppEvent(ev watcher.AppEvent) {
	if ev.Type == watcher.Resync {
		return // an unchanged object: no transition
	}
	n.transition(ev.Old, ev.New, ev.Initial)
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
	n.push(notifyItem{app: app, event: &ev})
}

// createdBefore reports whether the Application was created before the
// second this Notifier started in (creationTimestamp has no finer grain):
// an informer may deliver part of its initial list after reporting synced,
// and such an Application is not new.
func (n *Notifier) createdBefore(a *watcher.App) bool {
	if a.Object == nil {
		return false
	}
	ts := a.Object.GetCreationTimestamp()
	return !ts.IsZero() && ts.Time.Before(n.started)
}

func (n *Notifier) push(it notifyItem) {
	it.at = time.Now()
	key := it.app.Key()
	n.mu.Lock()
	if n.seen != nil && !it.deleted {
		n.seen[appID(it.app)] = true
	}
	it.beforeStart = !n.running
	added := 1
	if q := n.pending[key]; !n.running && len(q) > 0 && it.event == nil && q[len(q)-1].event == nil {
		// Not started yet (loading state, or a standby waiting for the
		// lease): keep only the latest state, evaluated as a restart
		// would, so a standby holds one item per Application and never
		// replays transitions the leader already announced.
		last := q[len(q)-1]
		it.prev, it.initial = nil, last.initial || it.initial
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
		return ErrNotifierNotConfigured
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
		var states map[string]NotifyState
		if states, err = n.State.LoadAll(ctx); err == nil {
			n.mu.Lock()
			n.states = states
			n.mu.Unlock()
			return nil
		}
		n.Log.Warn("loading notification state failed; retrying", "error", err, "attempt", attempt+1)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(min(time.Duration(1<<attempt)*time.Second, 30*time.Second)):
		}
	}
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
		err := n.process(ctx, &items[i])
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

// appID identifies an Application in state and dedupe keys: its UID, so a
// re-created Application starts afresh, or namespace/name without one.
func appID(a *watcher.App) string {
	if a.UID != "" {
		return a.UID
	}
	return a.Key()
}

// process evaluates one observation and records its deliveries, then its
// state. An error leaves the state unchanged: the retry yields the same
// dedupe keys, which the outbox has already recorded.
func (n *Notifier) process(ctx context.Context, it *notifyItem) error {
	c := n.config()
	if len(c.appTriggers)+len(c.eventTriggers) == 0 {
		return nil // notifications off: no state to keep either
	}
	id := appID(it.app)
	n.mu.Lock()
	st := n.states[id]
	n.mu.Unlock()

	obj := it.app.Object
	if obj == nil {
		obj = &unstructured.Unstructured{Object: map[string]any{}}
	}
	appMap := obj.Object
	if it.deleted && obj.GetDeletionTimestamp() == nil {
		// Gone without a finalizer: let on-deleted see it as deleting.
		appMap = obj.DeepCopy().Object
		meta, _ := appMap["metadata"].(map[string]any)
		if meta == nil {
			meta = map[string]any{}
			appMap["metadata"] = meta
		}
		meta["deletionTimestamp"] = n.Now().UTC().Format(time.RFC3339)
	}
	var prevMap, eventMap map[string]any
	if it.prev != nil && it.prev.Object != nil {
		prevMap = it.prev.Object.Object
	}
	names := c.appTriggers
	if it.event != nil {
		eventMap = it.event.Map()
		names = c.eventTriggers
	}
	env := triggers.NewEnv(appMap, prevMap, eventMap, c.set.Config.Context, n.Now())
	if n.Repo != nil {
		env.Repo = TriggerRepo(ctx, n.Repo, appMap)
	}
	var results []triggers.Result
	for _, name := range names {
		results = triggers.EvaluateAppend(results, c.set.Triggers[name], env)
	}
	n.Metrics.evaluated(results)
	for _, r := range results {
		if r.Err != nil {
			n.Log.Debug("trigger condition failed to evaluate", "app", it.app.Key(), "trigger", r.Trigger, "condition", r.Condition, "error", r.Err)
		}
	}
	next, sends := triggers.Step(st.State, results, triggers.StepOptions{
		App: id, Baseline: c.baseline && !isNew(*it), Event: it.event != nil, MaxKeys: n.MaxKeys,
	})
	ns := NotifyState{State: next, Seq: st.Seq}
	for _, s := range sends {
		if s.OncePer == "" {
			ns.Seq = st.Seq + 1
		}
	}
	if len(sends) > 0 {
		seq, err := n.deliver(ctx, c, it, appMap, eventMap, sends, ns.Seq)
		if err != nil {
			return err
		}
		ns.Seq = max(ns.Seq, seq)
	}
	if it.deleted {
		ns = NotifyState{}
	}
	if statesEqual(st, ns) {
		return nil
	}
	if err := n.State.Save(ctx, id, ns); err != nil {
		return fmt.Errorf("saving notification state: %w", err)
	}
	n.mu.Lock()
	if it.deleted {
		delete(n.states, id)
	} else {
		if n.states == nil {
			n.states = map[string]NotifyState{}
		}
		n.states[id] = ns
	}
	n.mu.Unlock()
	return nil
}

// maybeSent reports whether an earlier process may have sent what it
// fires: it is a first look after a start (a restart's, or a standby's
// taking over), was queued before this notifier started, or is an
// announcement recovered from the write journal.
func (it notifyItem) maybeSent() bool {
	return it.initial || it.beforeStart || (it.event != nil && it.event.Recovered)
}

// observedAt is when it was observed, for the notification latency; zero
// (not counted) for what an earlier process may have sent, which is
// catching up.
func observedAt(it notifyItem) time.Time {
	if it.maybeSent() {
		return time.Time{}
	}
	return it.at
}

// isNew reports whether the observation is an Application created while
// crowsnest watched: its conditions are news even on first sight. Any
// other first sight (the initial list, notifications just turned on, a
// state that was lost) is a baseline.
func isNew(it notifyItem) bool {
	return it.prev == nil && !it.initial && !it.deleted && it.event == nil
}

func statesEqual(a, b NotifyState) bool {
	return a.Seen == b.Seen && a.Seq == b.Seq && slices.Equal(a.Fired, b.Fired)
}

// deliver resolves the destinations of each send and enqueues one
// delivery per destination. It returns the highest level counter its keys
// used, which is seq unless a key was taken (freshKey).
func (n *Notifier) deliver(ctx context.Context, c *notifyConfig, it *notifyItem, appMap, eventMap map[string]any, sends []triggers.Send, seq uint64) (uint64, error) {
	app := it.app
	used := seq
	var projAnn map[string]string
	if n.Project != nil {
		if p := n.Project(app); p != nil {
			projAnn = p.Annotations
		}
	}
	for _, s := range sends {
		dests, err := c.resolver.DestinationsFor(s.Trigger, app.Labels, app.Annotations, projAnn)
		if err != nil {
			n.Log.Warn("malformed notification subscription skipped", "app", app.Key(), "error", err)
		}
		if len(dests) == 0 {
			n.Log.Debug("trigger fired without subscribers", "app", app.Key(), "trigger", s.Trigger)
		}
		for _, d := range dests {
			typ := c.serviceType(d.Service)
			if typ == "" {
				n.Log.Warn("subscription names an unknown notification service", "app", app.Key(), "trigger", s.Trigger, "service", d.Service)
				continue
			}
			msg, err := c.render(s.Templates, d.Service, TemplateVarsRepo(ctx, n.Repo, appMap, eventMap, c.set.Config.Context, typ))
			if err != nil {
				// A template that fails on this Application will fail on
				// every retry: report it and move on.
				n.Log.Error("rendering notification failed", "app", app.Key(), "trigger", s.Trigger, "service", d.Service, "error", err)
				continue
			}
			for _, r := range c.recipients(d) {
				dest := s.Key + "|" + d.Service + "|" + r
				dseq, retry := it.seqs[dest]
				if !retry {
					dseq = seq
				}
				for {
					if s.OncePer == "" {
						// Noted before the enqueue: one that fails may
						// have landed, and its retry must find it.
						if it.seqs == nil {
							it.seqs = map[string]uint64{}
						}
						it.seqs[dest] = dseq
					}
					rec, created, err := n.Outbox.Enqueue(ctx, notify.Delivery{
						Key: deliveryKey(s, dseq, d.Service, r), App: app.Key(), Trigger: s.Trigger,
						Service: d.Service, Recipient: r, Notification: msg,
						// A first look, or a recovered announcement, may re-fire
						// what an earlier process sent and did not record.
						MaybeSent: it.maybeSent(), ObservedAt: observedAt(*it),
					})
					if err != nil {
						return used, fmt.Errorf("enqueuing %s notification for %s: %w", s.Trigger, d.Service, err)
					}
					if created {
						n.Log.Info("notification queued", "app", app.Key(), "trigger", s.Trigger, "service", d.Service, "recipient", r)
						break
					}
					if retry || !n.freshKey(*it, s) {
						break
					}
					n.Log.Info("this firing's dedupe key was used by an earlier firing whose state was not saved; taking a new one",
						"app", app.Key(), "trigger", s.Trigger, "service", d.Service, "delivery", rec.ID)
					dseq = max(dseq+1, n.seqFloor())
				}
				used = max(used, dseq)
			}
		}
	}
	return used, nil
}

// freshKey reports whether a level firing (no oncePer) whose key the
// outbox already holds needs a new one. On the first attempt of a live
// observation it does: the key was used by another firing, whose state
// never landed (a process died between enqueueing and saving, or the state
// was lost or pruned) while the condition went false meanwhile, and
// keeping the key would drop this firing as a copy of that one. A retry
// keeps the keys of its first attempt (notifyItem.seqs), whatever the
// outbox holds by then. A first look after a start (maybeSent) keeps the
// key: the condition held when the earlier process fired and may never
// have stopped, so this is that firing again.
func (n *Notifier) freshKey(it notifyItem, s triggers.Send) bool {
	return s.OncePer == "" && !it.maybeSent()
}

// seqFloor is where a level counter jumps when its key was taken: this
// start's time in nanoseconds, past any counter an earlier process can
// have reached by counting from its own saved state.
func (n *Notifier) seqFloor() uint64 {
	n.mu.Lock()
	defer n.mu.Unlock()
	return uint64(n.loadedAt.UnixNano())
}
