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

// DefaultDelay is how long the batcher collects changes after the
// first one arrives: long enough that a poll cycle's worth of Applications
// sharing a repository lands in one commit, short enough to feel immediate.
const DefaultDelay = 2 * time.Second

// DefaultMaxDelay bounds how long a batch waits past its Delay for
// the engine to settle (Activity.Idle): a busy machine may take longer
// than Delay to decide a poll cycle's Applications, and each decided late
// would otherwise be a commit of its own; a write is never held longer.
const DefaultMaxDelay = 15 * time.Second

// settlePoll is how often a batch past its Delay asks whether the
// engine is still busy.
const settlePoll = 100 * time.Millisecond

// Applier writes Git changes (gitwb.Writer).
type Applier interface {
	Apply(ctx context.Context, changes []gitwb.Change) ([]gitwb.Result, error)
}

// Activity says whether the engine is still deciding
// (controller.Engine): a batch past its Delay waits while it is not
// Idle, so Applications decided in the same wave land in one commit
// however loaded the machine is.
type Activity interface {
	Idle() bool
}

// ErrNoResult fails an Application the writer returned nothing about: it
// is retried rather than silently dropped.
var ErrNoResult = errors.New("the Git writer returned no result for this Application's changes")

// Batcher collects Git write-backs from many reconciles and writes them
// together, one commit per repository and branch per batch. Reconciles do
// not wait for the push: the image reconciler takes each batch (Next),
// writes it (Write), reports each Application's Outcome and then says the
// batch is settled (controller.ImageReconciler.RunGit). Outcomes are
// attributed by the Application's key (see attribute).
type Batcher struct {
	Writer Applier
	// Delay is the collection window; zero is DefaultDelay.
	Delay time.Duration
	// MaxDelay bounds the collection window while the Engine is busy;
	// zero is DefaultMaxDelay.
	MaxDelay time.Duration
	// Engine, when set, holds a batch past its Delay while it is not Idle
	// (up to MaxDelay).
	Engine Activity

	mu       sync.Mutex
	pending  map[string][]gitwb.Change // by Application key; the latest wins
	flushing bool
	writing  int // Applications in the batch being written
	wake     chan struct{}
}

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

// Batch is the changes one collection window took, by Application key.
// Every Batch that Next returns must be given to Write and then to
// Settled: the batcher counts its Applications as being written until
// then (Idle, Pending).
type Batch struct {
	pending map[string][]gitwb.Change
}

// Len counts the Applications in the batch.
func (b Batch) Len() int { return len(b.pending) }

// Next waits for the next batch: for a first change, then out the
// collection window (Delay, then while the Engine is busy, up to
// MaxDelay). It returns the batch and true, or, once ctx has ended, what
// was pending then (maybe nothing) and false, so that a shutdown loses
// nothing that was decided.
func (b *Batcher) Next(ctx context.Context) (Batch, bool) {
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
			return b.take(), false
		case <-wake:
		}
		if !b.collect(ctx, delay) {
			return b.take(), false
		}
		if batch := b.take(); batch.Len() > 0 {
			return batch, true
		}
	}
}

// take takes what is pending as a batch; its Applications count as being
// written until the batch is Settled.
func (b *Batcher) take() Batch {
	b.mu.Lock()
	defer b.mu.Unlock()
	pending := b.pending
	b.pending = nil
	if len(pending) > 0 {
		b.flushing, b.writing = true, len(pending)
	}
	return Batch{pending: pending}
}

// collect waits out one batch's collection window: delay, then while the
// Engine is not idle, until MaxDelay from the start. It reports false when
// ctx ended first.
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
		if b.Engine == nil || left <= 0 || b.Engine.Idle() {
			return true
		}
		wait = min(settlePoll, left)
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
// write intents settled): the batcher is Idle again.
func (b *Batcher) Settled(batch Batch) {
	if batch.Len() == 0 {
		return
	}
	b.mu.Lock()
	b.flushing, b.writing = false, 0
	b.mu.Unlock()
}
