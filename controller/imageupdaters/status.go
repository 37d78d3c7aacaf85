package imageupdaters

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/util/retry"

	"github.com/crowsnest-dev/crowsnest/controller/imageupdate"
	"github.com/crowsnest-dev/crowsnest/watcher"
)

// Condition types and reasons written into an ImageUpdater's status:
// argocd-image-updater 1.x's own, so dashboards and `kubectl get
// imageupdaters` (its Ready column) read crowsnest's status as theirs.
const (
	ConditionReady       = "Ready"
	ConditionReconciling = "Reconciling"
	ConditionError       = "Error"

	ReasonSucceeded           = "ReconcileSucceeded"
	ReasonCompletedWithErrors = "ReconcileCompletedWithErrors"
	ReasonFailed              = "ReconcileFailed"
	ReasonIdle                = "Idle"
	ReasonNoErrors            = "NoErrors"
	ReasonPartialErrors       = "PartialErrors"
	ReasonReconcileError      = "ReconcileError"
)

// Defaults of StatusWriter.
const (
	// DefaultStatusInterval is how often status is recomputed without a
	// change: Applications come and go, and their labels change, without
	// any ImageUpdater changing.
	DefaultStatusInterval = 10 * time.Second
	// DefaultStatusGap is the least time between two passes: a burst of
	// changes (a first list, a kubectl apply of many resources) becomes
	// one pass, so writes are bounded by resources per gap.
	DefaultStatusGap = time.Second
	// DefaultStatusRefresh is how old lastCheckedAt may grow before it is
	// written again with nothing else changed: dashboards show it, and
	// argocd-image-updater refreshes it every cycle (2 minutes by
	// default), so a few minutes keeps it meaningful at little cost.
	DefaultStatusRefresh = 5 * time.Minute
	// maxMessageProblems caps the problems one condition message lists.
	maxMessageProblems = 10
)

// AppLister is what the status writer reads of the engine's Applications.
type AppLister interface {
	AppKeys() []string
	// AppView returns the Application without its Object (which the
	// status never reads), not to be changed; nil when gone.
	AppView(key string) *watcher.App
}

// Store holds the copies of ImageUpdaters read from the apiserver
// (Watcher).
type Store interface {
	// Get returns the copy of namespace/name, nil when gone.
	Get(key string) *unstructured.Unstructured
}

// StatusWriter writes each ImageUpdater's status subresource: the
// Applications it selects, their images, and conditions; only when
// something changed (lastCheckedAt aside, refreshed every Refresh), with
// conflicts retried on the newest object.
type StatusWriter struct {
	Set    *Set
	Apps   AppLister
	Client dynamic.Interface
	// Store holds the watcher's copies of the ImageUpdaters.
	Store    Store
	Interval time.Duration
	Gap      time.Duration
	Refresh  time.Duration
	Now      func() time.Time
	Log      *slog.Logger
	Metrics  *Metrics
}

// Start writes statuses until ctx ends.
func (w *StatusWriter) Start(ctx context.Context) error {
	interval := cmpDur(w.Interval, DefaultStatusInterval)
	gap := cmpDur(w.Gap, DefaultStatusGap)
	tick := time.NewTicker(interval)
	defer tick.Stop()
	changed := w.Set.Changed()
	for {
		w.Pass(ctx)
		select {
		case <-ctx.Done():
			return nil
		case <-changed:
		case <-tick.C:
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(gap): // a wait for a burst to end, not a poll
		}
	}
}

func cmpDur(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}

// observed is what one pass found for one resource.
type observed struct {
	generation int64
	apps       int32
	images     int32
	problems   []error
	failed     bool // no applicationRef usable
	updates    []RecentUpdate
	lastUpdate time.Time
}

// observe computes every resource's counts and problems from the
// Applications the engine knows.
func (w *StatusWriter) observe() map[string]*observed {
	s := w.Set
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := map[string]*observed{}
	for key, res := range s.resources {
		o := &observed{generation: res.generation, problems: res.problems, failed: len(res.rules) == 0}
		if u := s.updates[key]; u != nil {
			o.lastUpdate = u.last
			for _, e := range u.list {
				o.updates = append(o.updates, RecentUpdate{Alias: e.alias, Image: e.image, NewVersion: e.version,
					ApplicationsUpdated: int32(len(e.apps)), // bounded by the Applications known
					UpdatedAt:           metav1.NewTime(e.at), Message: e.message})
			}
		}
		out[key] = o
	}
	if len(s.resources) == 0 {
		return out // no ImageUpdater: no Application to count
	}
	for _, appKey := range w.Apps.AppKeys() {
		app := w.Apps.AppView(appKey)
		if app == nil {
			continue
		}
		for _, m := range s.matches(app) {
			spec := &m.r.spec
			if m.r.UseAnnotations {
				spec = m.ann
				if m.r.Unverified != "" {
					spec = &imageupdate.Spec{}
				}
			}
			o := out[m.res.key]
			if len(spec.Images) > 0 {
				// Matched: an image is listed; managed: the images it
				// runs (or forces), as argocd-image-updater counts them.
				o.apps++
				for i := range spec.Images {
					if spec.Live(app, &spec.Images[i]) {
						o.images++
					}
				}
			}
			o.problems = append(o.problems, s.appProblems[m.res.key][appKey]...)
		}
	}
	return out
}

// Pass writes the status of every resource whose status changed.
func (w *StatusWriter) Pass(ctx context.Context) {
	for key, o := range w.observe() {
		if err := w.write(ctx, key, o); err != nil && ctx.Err() == nil {
			w.Metrics.statusWrite("error")
			w.Log.Warn("writing ImageUpdater status failed", "imageupdater", key, "error", err)
		}
	}
}

// write updates one resource's status when it differs from o.
func (w *StatusWriter) write(ctx context.Context, key string, o *observed) error {
	cur := w.Store.Get(key)
	if cur == nil {
		return nil
	}
	now := time.Now
	if w.Now != nil {
		now = w.Now
	}
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		next, changed, err := desired(cur, o, now(), cmpDur(w.Refresh, DefaultStatusRefresh))
		if err != nil || !changed {
			return err
		}
		_, err = w.Client.Resource(gvr).Namespace(cur.GetNamespace()).UpdateStatus(ctx, next, metav1.UpdateOptions{})
		if apierrors.IsConflict(err) {
			w.Metrics.statusWrite("conflict")
			fresh, getErr := w.Client.Resource(gvr).Namespace(cur.GetNamespace()).Get(ctx, cur.GetName(), metav1.GetOptions{})
			if getErr != nil {
				return getErr
			}
			cur = fresh
			return err
		}
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err == nil {
			w.Metrics.statusWrite("success")
			w.Log.Debug("ImageUpdater status written", "imageupdater", key, "applications", o.apps, "images", o.images, "problems", len(o.problems))
		}
		return err
	})
}

// RecentUpdate is one entry of status.recentUpdates.
type RecentUpdate struct {
	Alias               string      `json:"alias"`
	Image               string      `json:"image"`
	NewVersion          string      `json:"newVersion"`
	ApplicationsUpdated int32       `json:"applicationsUpdated"`
	UpdatedAt           metav1.Time `json:"updatedAt"`
	Message             string      `json:"message,omitempty"`
}

// status is argocd-image-updater's status.
type status struct {
	ObservedGeneration  int64              `json:"observedGeneration,omitempty"`
	LastCheckedAt       *metav1.Time       `json:"lastCheckedAt,omitempty"`
	LastUpdatedAt       *metav1.Time       `json:"lastUpdatedAt,omitempty"`
	RecentUpdates       []RecentUpdate     `json:"recentUpdates,omitempty"`
	ApplicationsMatched int32              `json:"applicationsMatched"`
	ImagesManaged       int32              `json:"imagesManaged"`
	Conditions          []metav1.Condition `json:"conditions,omitempty"`
}

// desired returns cur with its status brought up to o, and whether that
// changed anything worth a write. Fields crowsnest does not know are kept.
func desired(cur *unstructured.Unstructured, o *observed, now time.Time, refresh time.Duration) (*unstructured.Unstructured, bool, error) {
	var st status
	raw, _, _ := unstructured.NestedMap(cur.Object, "status")
	if raw != nil {
		data, err := json.Marshal(raw)
		if err != nil {
			return nil, false, err
		}
		if err := json.Unmarshal(data, &st); err != nil {
			st = status{} // a status another writer broke: rebuilt
		}
	}
	before, _ := json.Marshal(withoutTime(st))
	gen := cur.GetGeneration()
	st.ObservedGeneration = gen
	st.ApplicationsMatched, st.ImagesManaged = o.apps, o.images
	// Updates this process made; after a restart, the ones written
	// before stay until the next.
	if len(o.updates) > 0 {
		t := metav1.NewTime(o.lastUpdate)
		st.LastUpdatedAt, st.RecentUpdates = &t, o.updates
	}
	for _, c := range conditions(o, gen) {
		c.LastTransitionTime = metav1.NewTime(now) // kept unless the status changes
		apimeta.SetStatusCondition(&st.Conditions, c)
	}
	after, _ := json.Marshal(withoutTime(st))
	stale := st.LastCheckedAt == nil || now.Sub(st.LastCheckedAt.Time) >= refresh
	if bytes.Equal(before, after) && !stale {
		return nil, false, nil
	}
	t := metav1.NewTime(now)
	st.LastCheckedAt = &t
	fields, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&st)
	if err != nil {
		return nil, false, err
	}
	next := cur.DeepCopy()
	if raw == nil {
		raw = map[string]any{}
	}
	merged := make(map[string]any, len(raw)+len(fields))
	for k, v := range raw {
		merged[k] = v
	}
	for k, v := range fields {
		merged[k] = v
	}
	if err := unstructured.SetNestedField(next.Object, merged, "status"); err != nil {
		return nil, false, err
	}
	return next, true, nil
}

// withoutTime drops what changes without meaning: lastCheckedAt, and the
// conditions' transition times.
func withoutTime(st status) status {
	st.LastCheckedAt = nil
	cs := make([]metav1.Condition, len(st.Conditions))
	for i, c := range st.Conditions {
		c.LastTransitionTime = metav1.Time{}
		cs[i] = c
	}
	st.Conditions = cs
	return st
}

// conditions are argocd-image-updater's three, with its reasons.
func conditions(o *observed, gen int64) []metav1.Condition {
	idle := metav1.Condition{Type: ConditionReconciling, Status: metav1.ConditionFalse, Reason: ReasonIdle,
		Message: "crowsnest reconciles continuously; no check is pending.", ObservedGeneration: gen}
	switch {
	case o.failed:
		msg := problemText(o.problems, maxMessageProblems)
		return []metav1.Condition{idle,
			{Type: ConditionError, Status: metav1.ConditionTrue, Reason: ReasonReconcileError, Message: msg, ObservedGeneration: gen},
			{Type: ConditionReady, Status: metav1.ConditionFalse, Reason: ReasonFailed,
				Message: "No applicationRef can be used: " + msg, ObservedGeneration: gen}}
	case len(o.problems) > 0:
		return []metav1.Condition{idle,
			{Type: ConditionError, Status: metav1.ConditionTrue, Reason: ReasonPartialErrors, Message: problemText(o.problems, maxMessageProblems), ObservedGeneration: gen},
			{Type: ConditionReady, Status: metav1.ConditionTrue, Reason: ReasonCompletedWithErrors,
				Message: fmt.Sprintf("Reconciled %d applications with %d errors.", o.apps, len(o.problems)), ObservedGeneration: gen}}
	default:
		return []metav1.Condition{idle,
			{Type: ConditionError, Status: metav1.ConditionFalse, Reason: ReasonNoErrors, Message: "No errors.", ObservedGeneration: gen},
			{Type: ConditionReady, Status: metav1.ConditionTrue, Reason: ReasonSucceeded,
				Message: fmt.Sprintf("Reconciled %d applications, %d images managed.", o.apps, o.images), ObservedGeneration: gen}}
	}
}
