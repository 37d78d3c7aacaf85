package pipeline

import (
	"context"
	"fmt"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/crowsnest-dev/crowsnest/notify"
	"github.com/crowsnest-dev/crowsnest/notify/outbox"
	"github.com/crowsnest-dev/crowsnest/triggers"
	"github.com/crowsnest-dev/crowsnest/watcher"
)

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
func (n *Notifier) process(ctx context.Context, it *item) error {
	c := n.config()
	if len(c.appTriggers)+len(c.eventTriggers) == 0 {
		return nil // notifications off: no state to keep either
	}
	// Decoded only now: with notifications off, never.
	it.app, it.prev = it.kept.App(), it.keptPrev.App()
	id := appID(it.app)
	n.mu.Lock()
	st := n.states[id]
	n.mu.Unlock()

	appMap, prevMap := n.appMaps(it)
	var eventMap map[string]any
	if it.event != nil {
		eventMap = it.event.Map()
	}
	results := n.evaluate(ctx, c, it, appMap, prevMap, eventMap)
	next, sends := triggers.Step(st.State, results, triggers.StepOptions{
		App: id, Baseline: c.baseline && !isNew(*it), Event: it.event != nil, MaxKeys: n.MaxKeys,
	})
	ns := State{State: next, Seq: st.Seq}
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
		ns = State{}
	}
	return n.saveState(ctx, id, st, ns, it.deleted)
}

// appMaps returns the Application of an observation and the one before it
// as the maps triggers and templates read. A deleted Application gone
// without a finalizer gets a deletionTimestamp, so that on-deleted sees it
// as deleting.
func (n *Notifier) appMaps(it *item) (appMap, prevMap map[string]any) {
	obj := it.app.Object
	if obj == nil {
		obj = &unstructured.Unstructured{Object: map[string]any{}}
	}
	appMap = obj.Object
	if it.deleted && obj.GetDeletionTimestamp() == nil {
		appMap = obj.DeepCopy().Object
		meta, _ := appMap["metadata"].(map[string]any)
		if meta == nil {
			meta = map[string]any{}
			appMap["metadata"] = meta
		}
		meta["deletionTimestamp"] = n.Now().UTC().Format(time.RFC3339)
	}
	if it.prev != nil && it.prev.Object != nil {
		prevMap = it.prev.Object.Object
	}
	return appMap, prevMap
}

// evaluate runs the triggers that read an observation of its kind (the
// event triggers for one of crowsnest's events, else the Application
// triggers) and counts the results.
func (n *Notifier) evaluate(ctx context.Context, c *compiled, it *item, appMap, prevMap, eventMap map[string]any) []triggers.Result {
	names := c.appTriggers
	if it.event != nil {
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
	return results
}

// saveState stores ns, the state after an observation, when it differs
// from st, the state before; deleted drops the Application's state.
func (n *Notifier) saveState(ctx context.Context, id string, st, ns State, deleted bool) error {
	if statesEqual(st, ns) {
		return nil
	}
	if err := n.State.Save(ctx, id, ns); err != nil {
		return fmt.Errorf("saving notification state: %w", err)
	}
	n.mu.Lock()
	if deleted {
		delete(n.states, id)
	} else {
		if n.states == nil {
			n.states = map[string]State{}
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
func (it item) maybeSent() bool {
	return it.initial || it.beforeStart || (it.event != nil && it.event.Recovered)
}

// observedAt is when it was observed, for the notification latency; zero
// (not counted) for what an earlier process may have sent, which is
// catching up.
func observedAt(it item) time.Time {
	if it.maybeSent() {
		return time.Time{}
	}
	return it.at
}

// isNew reports whether the observation is an Application created while
// crowsnest watched: its conditions are news even on first sight. Any
// other first sight (the initial list, notifications just turned on, a
// state that was lost) is a baseline.
func isNew(it item) bool {
	return it.prev == nil && !it.initial && !it.deleted && it.event == nil
}

func statesEqual(a, b State) bool {
	return a.Seen == b.Seen && a.Seq == b.Seq && slices.Equal(a.Fired, b.Fired)
}

// deliver resolves the destinations of each send and enqueues one
// delivery per destination. It returns the highest level counter its keys
// used, which is seq unless a key was taken (freshKey).
func (n *Notifier) deliver(ctx context.Context, c *compiled, it *item, appMap, eventMap map[string]any, sends []triggers.Send, seq uint64) (uint64, error) {
	app := it.app
	used := seq
	var projAnn map[string]string
	if n.Apps != nil {
		if p := n.Apps.Project(app); p != nil {
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
				n.Metrics.renderFailed(d.Service, RenderError)
				continue
			}
			if repo, err := n.checkRepository(c, app, d.Service, msg); err != nil {
				n.Log.Warn("notification refused: the Application may not use the repository the service would act on",
					"app", app.Key(), "trigger", s.Trigger, "service", d.Service, "repository", repo, "error", err)
				n.Metrics.renderFailed(d.Service, RenderRefused)
				continue
			}
			for _, r := range c.recipients(d) {
				dseq, err := n.enqueue(ctx, it, s, d.Service, r, msg, seq)
				if err != nil {
					return used, err
				}
				used = max(used, dseq)
			}
		}
	}
	return used, nil
}

// enqueue records the delivery of one send to one recipient of service
// and returns the level counter its key took: seq, the one of the first
// attempt on a retry, or a fresh one when the key was taken (freshKey).
func (n *Notifier) enqueue(ctx context.Context, it *item, s triggers.Send, service, r string, msg notify.Notification, seq uint64) (uint64, error) {
	app := it.app
	dest := s.Key + "|" + service + "|" + r
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
		rec, created, err := n.Outbox.Enqueue(ctx, outbox.Delivery{
			Key: deliveryKey(s, dseq, service, r), App: app.Key(), Trigger: s.Trigger,
			Service: service, Recipient: r, Notification: msg,
			// A first look, or a recovered announcement, may re-fire
			// what an earlier process sent and did not record.
			MaybeSent: it.maybeSent(), ObservedAt: observedAt(*it),
		})
		if err != nil {
			return dseq, fmt.Errorf("enqueuing %s notification for %s: %w", s.Trigger, service, err)
		}
		if created {
			n.Log.Info("notification queued", "app", app.Key(), "trigger", s.Trigger, "service", service, "recipient", r)
			return dseq, nil
		}
		if retry || !n.freshKey(*it, s) {
			return dseq, nil
		}
		n.Log.Info("this firing's dedupe key was used by an earlier firing whose state was not saved; taking a new one",
			"app", app.Key(), "trigger", s.Trigger, "service", service, "delivery", rec.ID)
		dseq = max(dseq+1, n.seqFloor())
	}
}

// freshKey reports whether a level firing (no oncePer) whose key the
// outbox already holds needs a new one. On the first attempt of a live
// observation it does: the key was used by another firing, whose state
// never landed (a process died between enqueueing and saving, or the state
// was lost or pruned) while the condition went false meanwhile, and
// keeping the key would drop this firing as a copy of that one. A retry
// keeps the keys of its first attempt (item.seqs), whatever the
// outbox holds by then. A first look after a start (maybeSent) keeps the
// key: the condition held when the earlier process fired and may never
// have stopped, so this is that firing again.
func (n *Notifier) freshKey(it item, s triggers.Send) bool {
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
