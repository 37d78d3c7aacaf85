package controller

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/crowsnest-dev/crowsnest/triggers"
	"github.com/crowsnest-dev/crowsnest/watcher"
	gitwb "github.com/crowsnest-dev/crowsnest/writeback/git"
)

// DefaultGitBatchDelay is how long the batcher collects changes after the
// first one arrives: long enough that a poll cycle's worth of Applications
// sharing a repository lands in one commit, short enough to feel immediate.
const DefaultGitBatchDelay = 2 * time.Second

// gitRetryDelay is when an Application whose write failed is tried again;
// the writer already retried transient errors within its attempt budget.
const gitRetryDelay = time.Minute

// GitApplier writes Git changes (gitwb.Writer).
type GitApplier interface {
	Apply(ctx context.Context, changes []gitwb.Change) ([]gitwb.Result, error)
}

// GitBatcher collects Git write-backs from many reconciles and writes them
// together, one commit per repository and branch per batch. Reconciles do
// not wait for the push; results come back as Events and metrics, and
// failed Applications are requeued.
type GitBatcher struct {
	Writer GitApplier
	// Delay is the collection window; zero is DefaultGitBatchDelay.
	Delay   time.Duration
	Enqueue func(key string, after time.Duration)
	Events  EventRecorder
	// Notify, when set, receives an image-updated event per change
	// written; App looks the Application up by key for it.
	Notify func(app *watcher.App, ev triggers.Event)
	App    func(key string) *watcher.App
	// OnUnchanged, when set, hears of each Application whose changes a
	// batch found already in the repository (ImageReconciler.GitUnchanged
	// announces a write a crash kept from being announced).
	OnUnchanged func(app *watcher.App)
	Metrics     *ImageMetrics
	Log         *slog.Logger

	mu       sync.Mutex
	pending  map[string][]gitwb.Change // by Application key; the latest wins
	flushing bool
	wake     chan struct{}
}

// Idle reports whether nothing is queued or being written.
func (b *GitBatcher) Idle() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.pending) == 0 && !b.flushing
}

// Add queues an Application's changes (one per repository, branch and
// source it writes) for the next batch, replacing what it had queued.
func (b *GitBatcher) Add(key string, chs ...gitwb.Change) {
	b.mu.Lock()
	if b.pending == nil {
		b.pending = map[string][]gitwb.Change{}
	}
	if b.wake == nil {
		b.wake = make(chan struct{}, 1)
	}
	b.pending[key] = chs
	b.mu.Unlock()
	select {
	case b.wake <- struct{}{}:
	default:
	}
}

// Start writes batches until ctx ends; what is pending then is written
// first, so a shutdown loses nothing that was decided.
func (b *GitBatcher) Start(ctx context.Context) error {
	b.mu.Lock()
	if b.wake == nil {
		b.wake = make(chan struct{}, 1)
	}
	wake := b.wake
	b.mu.Unlock()
	delay := b.Delay
	if delay <= 0 {
		delay = DefaultGitBatchDelay
	}
	for {
		select {
		case <-ctx.Done():
			b.flush(context.WithoutCancel(ctx))
			return nil
		case <-wake:
		}
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			b.flush(context.WithoutCancel(ctx))
			return nil
		case <-t.C:
		}
		b.flush(ctx)
	}
}

// flush writes everything pending as one Apply (the writer groups it by
// repository and branch).
func (b *GitBatcher) flush(ctx context.Context) {
	b.mu.Lock()
	pending := b.pending
	b.pending = nil
	b.flushing = len(pending) > 0
	b.mu.Unlock()
	if len(pending) == 0 {
		return
	}
	defer func() {
		b.mu.Lock()
		b.flushing = false
		b.mu.Unlock()
	}()
	keys := slices.Sorted(maps.Keys(pending))
	changes := make([]gitwb.Change, 0, len(keys))
	for _, k := range keys {
		changes = append(changes, pending[k]...)
	}
	results, err := b.Writer.Apply(ctx, changes)
	if err != nil && len(results) == 0 {
		// The whole call failed before writing (e.g. a bad branch):
		// every Application in it tries again later. Otherwise each
		// result carries its own error: one repository refusing the
		// push must not fail (and re-announce) the others that landed.
		b.Log.Error("git write-back failed", "apps", len(keys), "error", err)
		for _, k := range keys {
			b.fail(k, err)
		}
		return
	}
	for i := range results {
		b.report(&results[i], pending)
	}
}

func (b *GitBatcher) report(res *gitwb.Result, pending map[string][]gitwb.Change) {
	// The writer names Applications by name (Change.App), the engine by
	// namespace/name.
	failed := map[string]error{}
	for _, f := range res.Failed {
		failed[f.App] = f.Err
	}
	byApp := map[string][]string{}
	for _, u := range res.Updates {
		byApp[u.App] = append(byApp[u.App], fmt.Sprintf("%s: %s -> %s", u.Image, orNone(u.From), u.To))
	}
	// Applications of this batch: those whose change went to this
	// repository, or that it names.
	var apps []string
	for k, chs := range pending {
		for _, ch := range chs {
			if ch.RepoURL == res.RepoURL || failed[ch.App] != nil || byApp[ch.App] != nil {
				apps = append(apps, k)
				break
			}
		}
	}
	slices.Sort(apps)
	for _, k := range apps {
		name := pending[k][0].App
		switch {
		case res.Err != nil:
			b.fail(k, res.Err)
		case failed[name] != nil:
			b.fail(k, failed[name])
		case len(byApp[name]) > 0:
			b.Metrics.update("git", "success", len(byApp[name]))
			msg := fmt.Sprintf("%s (commit %s on %s of %s)", strings.Join(byApp[name], "; "), short(res.CommitSHA), res.Branch, res.RepoURL)
			b.Log.Info("images updated", "app", k, "method", "git", "commit", res.CommitSHA, "branch", res.Branch)
			b.event(k, corev1.EventTypeNormal, EventImagesUpdated, msg)
			b.notify(k, res)
		case b.OnUnchanged != nil && b.App != nil:
			if app := b.App(k); app != nil {
				b.OnUnchanged(app)
			}
		}
	}
}

func (b *GitBatcher) fail(key string, err error) {
	b.Metrics.update("git", "error", 1)
	b.Log.Warn("git write-back failed; will retry", "app", key, "error", err, "retryIn", gitRetryDelay)
	b.event(key, corev1.EventTypeWarning, EventImageUpdateFailed, "git write-back: "+err.Error())
	if b.Enqueue != nil {
		b.Enqueue(key, gitRetryDelay)
	}
}

func (b *GitBatcher) event(key, typ, reason, msg string) {
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

// notify hands one image-updated event per written change to the notifier.
func (b *GitBatcher) notify(key string, res *gitwb.Result) {
	if b.Notify == nil || b.App == nil {
		return
	}
	app := b.App(key)
	if app == nil {
		return
	}
	for _, u := range res.Updates {
		if u.App != app.Name {
			continue
		}
		b.Notify(app, gitUpdatedEvent(key, u.Image, u.From, u.To, res.CommitSHA, time.Now()))
	}
}

// gitUpdatedEvent is the image-updated event of a Git write-back. Its ID
// names the Application, image and new value only: the same whether the
// batch announces it or the write journal does after a crash (which knows
// neither the commit nor the file's previous value), so the notifier
// sends it once.
func gitUpdatedEvent(key, image, from, to, commit string, at time.Time) triggers.Event {
	return triggers.Event{Type: triggers.EventImageUpdated, Image: image, From: from, To: to, Commit: commit, Time: at,
		ID: strings.Join([]string{triggers.EventImageUpdated, key, image, to}, "|")}
}
