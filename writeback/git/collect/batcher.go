package collect

import (
	"context"
	"errors"
	"maps"
	"slices"
	"sync"
	"time"

	gitwb "github.com/crowsnest-dev/crowsnest/writeback/git"
)

// DefaultMaxDelay bounds how long a change waits for the engine to settle
// (Activity.Idle): a busy machine may take seconds to decide a poll
// cycle's or a first pass's Applications, and each decided after its
// repository's batch was taken would be a commit of its own; a write is
// never held longer.
const DefaultMaxDelay = 15 * time.Second

// DefaultMaxWriting is how many batches are written at once, each for
// its own repositories: a slow push holds only its own, and no more
// clones are in use at once than writeback/git keeps (DefaultMaxRepos,
// 16), so the cache can still evict the others.
const DefaultMaxWriting = 8

// settlePoll is how often changes held for the engine ask whether it is
// still busy: short, since a lone reconcile's change waits for nothing
// but its own reconcile to end, and cheap (Idle reads a few counters).
const settlePoll = 5 * time.Millisecond

// Applier writes Git changes (gitwb.Writer); Batcher.Write calls it from
// several goroutines at once when batches are written concurrently.
type Applier interface {
	Apply(ctx context.Context, changes []gitwb.Change) ([]gitwb.Result, error)
}

// Activity says whether the engine is still deciding
// (controller.Engine): changes wait while it is not Idle, so Applications
// decided in the same wave land in one commit however loaded the machine
// is.
type Activity interface {
	Idle() bool
}

// ErrNoResult fails an Application the writer returned nothing about: it
// is retried rather than silently dropped.
var ErrNoResult = errors.New("the Git writer returned no result for this Application's changes")

// Batcher collects Git write-backs from many reconciles and writes them
// by group commit, per repository: a change for a repository nothing is
// being written to goes out as soon as the engine has settled (at once
// after a lone reconcile: no fixed window), and the changes that arrive
// while a repository's batch is being written wait and go together in its
// next batch. The writer makes one commit per repository and branch of a
// batch, so a burst is one commit per repository and branch, or a few
// when it outlasts a push. Batches for different repositories are written
// at once (up to MaxWriting): one repository's slow push holds only its
// own changes. An Application's changes are written in one batch
// whatever repositories they go to, so each Application has one Outcome
// per batch.
//
// Reconciles do not wait for the push: the image reconciler takes each
// batch (Next), writes it (Write), reports each Application's Outcome
// and then says the batch is settled (controller.ImageReconciler.RunGit).
// Outcomes are attributed by the Application's key (see attribute).
type Batcher struct {
	Writer Applier
	// MaxDelay bounds how long a change waits for the Engine to settle;
	// zero is DefaultMaxDelay.
	MaxDelay time.Duration
	// Engine, when set, holds changes while it is not Idle (up to
	// MaxDelay).
	Engine Activity
	// MaxWriting is how many batches may be written at once; zero is
	// DefaultMaxWriting.
	MaxWriting int

	mu      sync.Mutex
	pending map[string]*queued // by Application key; the latest wins
	oldest  time.Time          // the earliest queued.since in pending
	busy    map[string]bool    // repositories (gitwb.RepoID) being written
	batches int                // batches taken and not yet Settled
	writing int                // Applications in them
	wake    chan struct{}
}

// queued is one Application's changes waiting for a batch.
type queued struct {
	changes []gitwb.Change
	repos   []string  // gitwb.RepoID of its changes, sorted, once each
	since   time.Time // when it was first queued since its last batch
}

// Idle reports whether nothing is queued or being written.
func (b *Batcher) Idle() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.pending) == 0 && b.batches == 0
}

// Pending counts the Applications whose changes wait for a batch or are
// being written (the crowsnest_git_writeback_pending gauge); one with a
// change in each counts twice.
func (b *Batcher) Pending() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.pending) + b.writing
}

// Add queues an Application's changes (one per repository, branch and
// source it writes) for its next batch, replacing what it had queued.
// Each change is keyed by key, whatever Key it had.
func (b *Batcher) Add(key string, chs ...gitwb.Change) {
	q := &queued{changes: slices.Clone(chs), since: time.Now()}
	for i := range q.changes {
		q.changes[i].Key = key
		q.repos = append(q.repos, gitwb.RepoID(q.changes[i].RepoURL))
	}
	slices.Sort(q.repos)
	q.repos = slices.Compact(q.repos)
	b.mu.Lock()
	b.init()
	if old := b.pending[key]; old != nil {
		q.since = old.since
	}
	b.pending[key] = q
	if b.oldest.IsZero() || q.since.Before(b.oldest) {
		b.oldest = q.since
	}
	b.mu.Unlock()
	b.signal()
}

func (b *Batcher) init() {
	if b.pending == nil {
		b.pending, b.busy = map[string]*queued{}, map[string]bool{}
	}
	if b.wake == nil {
		b.wake = make(chan struct{}, 1)
	}
}

func (b *Batcher) signal() {
	select {
	case b.wake <- struct{}{}:
	default:
	}
}

// Batch is the changes of one or more Applications taken together, by
// Application key, and the repositories they write. Every Batch that Next
// returns must be given to Write and then to Settled: its repositories
// count as being written until then (Idle, Pending, and no other batch
// for them).
type Batch struct {
	pending map[string][]gitwb.Change
	repos   []string
}

// Len counts the Applications in the batch.
func (b Batch) Len() int { return len(b.pending) }

// Next waits for the next batch: changes whose repositories nothing is
// being written to, once the Engine is idle (or they waited MaxDelay),
// while fewer than MaxWriting batches are being written. It returns the
// batch and true, or, once ctx has ended, after every batch being written
// was Settled, all that was pending (maybe nothing) and false, so that a
// shutdown loses nothing that was decided. One goroutine calls Next; the
// batches it returns may be written and Settled by others, at once.
func (b *Batcher) Next(ctx context.Context) (Batch, bool) {
	b.mu.Lock()
	b.init()
	wake := b.wake
	b.mu.Unlock()
	for ctx.Err() == nil {
		batch, wait := b.ready()
		if batch.Len() > 0 {
			return batch, true
		}
		if !sleep(ctx, wake, wait) {
			break
		}
	}
	return b.drain(wake), false
}

// sleep waits for wake, or wait when it is not zero; it reports false
// when ctx ended first.
func sleep(ctx context.Context, wake <-chan struct{}, wait time.Duration) bool {
	var tick <-chan time.Time
	if wait > 0 {
		t := time.NewTimer(wait)
		defer t.Stop()
		tick = t.C
	}
	select {
	case <-ctx.Done():
		return false
	case <-wake:
	case <-tick:
	}
	return true
}

// ready takes the next batch that may be written now. Without one, it
// says how long to wait before looking again; zero is until woken (Add,
// Settled).
func (b *Batcher) ready() (Batch, time.Duration) {
	b.mu.Lock()
	empty, full, oldest := len(b.pending) == 0, b.batches >= b.maxWriting(), b.oldest
	b.mu.Unlock()
	if empty || full {
		return Batch{}, 0
	}
	maxDelay := b.MaxDelay
	if maxDelay <= 0 {
		maxDelay = DefaultMaxDelay
	}
	// Asked outside the lock: the Engine may be busy adding.
	idle := b.Engine == nil || b.Engine.Idle()
	now := time.Now()
	if !idle && now.Sub(oldest) < maxDelay {
		return Batch{}, min(settlePoll, maxDelay-now.Sub(oldest))
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	batch, held := b.takeFree(now, idle, maxDelay)
	if batch.Len() == 0 && held > 0 {
		return batch, min(settlePoll, held)
	}
	return batch, 0
}

func (b *Batcher) maxWriting() int {
	if b.MaxWriting <= 0 {
		return DefaultMaxWriting
	}
	return b.MaxWriting
}

// drain waits until no batch is being written (their pushes have the
// writer's grace to finish), then takes all that is pending as one batch.
func (b *Batcher) drain(wake <-chan struct{}) Batch {
	for {
		b.mu.Lock()
		if b.batches == 0 {
			all := slices.Collect(maps.Keys(b.pending))
			batch := b.take(all)
			b.mu.Unlock()
			return batch
		}
		b.mu.Unlock()
		<-wake
	}
}

// Write writes a batch as one Apply (the writer groups it by repository
// and branch) and returns each Application's outcome, in key order. A push
// under way when ctx ends is given the writer's PushGrace to finish, and
// one whose answer is lost is looked for on the remote, so it is reported
// by what the remote has.
//
// The error is the writer's when the whole call failed before writing
// anything (the writer is not set up to write at all): every outcome then
// has that one failed result.
func (b *Batcher) Write(ctx context.Context, batch Batch) ([]Outcome, error) {
	pending := batch.pending
	if len(pending) == 0 {
		return nil, nil
	}
	keys := slices.Sorted(maps.Keys(pending))
	changes := make([]gitwb.Change, 0, len(keys))
	for _, k := range keys {
		changes = append(changes, pending[k]...)
	}
	results, err := b.Writer.Apply(ctx, changes)
	out := make([]Outcome, len(keys))
	index := make(map[string]*Outcome, len(keys))
	for i, k := range keys {
		out[i] = Outcome{Key: k, Changes: pending[k]}
		index[k] = &out[i]
	}
	if err != nil && len(results) == 0 {
		// The whole call failed before writing (the writer is not set
		// up to write at all): every Application in it tries again
		// later. Otherwise each result carries its own error: one
		// repository refusing the push, or one change whose branch is
		// unusable (a result of its own), must not fail (and
		// re-announce) the others.
		for i := range out {
			out[i].Results = []Result{{Err: err}}
		}
		return out, err
	}
	for i := range results {
		attribute(&results[i], index)
	}
	return out, nil
}

// Settled says a batch's outcomes are reported (Events, announcements,
// write intents settled): its repositories may take their next batch.
func (b *Batcher) Settled(batch Batch) {
	if batch.Len() == 0 {
		return
	}
	b.mu.Lock()
	for _, r := range batch.repos {
		delete(b.busy, r)
	}
	b.batches--
	b.writing -= batch.Len()
	b.mu.Unlock()
	b.signal()
}
