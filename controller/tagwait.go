package controller

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/crowsnest-dev/crowsnest/registry"
)

// maxTagWaitReads bounds the lists read at once for waiting reconciles:
// the default worker count, as many as blocked workers used to read. The
// rest queue here, not at the registry's rate limiter, so each read's
// timeout starts when it starts (thousands of reads booked on a 20/s
// limiter at once would time out waiting for their turn).
const maxTagWaitReads = DefaultWorkers

// tagWaits lets the first pass's reconciles wait for a tag list without
// holding a worker. At a cold start every repository is unread and the
// registry's rate limit paces the lists (500 repositories at 20/s take
// 20 s): a worker blocked on one repository's list cannot patch the
// Applications whose lists are already in. A reconcile that finds lists
// missing queues them to be read in the background and hands its worker
// back (Result.Waiting); when the last of them was read the Application
// goes back on the queue. Each Application waits so at most once per
// pass: when it comes back and a list is still missing (it failed) it
// reads it as before, and a failure takes the usual retries.
type tagWaits struct {
	mu sync.Mutex
	// lists holds the lists queued or being read, by client and
	// repository; queue the ones no reader took yet, in order.
	lists map[tagList]*listWait
	queue []*listWait
	// readers counts the goroutines reading the queue.
	readers int
	// left counts, per waiting key, the lists it still waits for;
	// enqueuing the keys whose lists were all read but which are not on
	// the engine's queue yet.
	left      map[string]int
	enqueuing int
	// waited holds the keys that waited once in this pass.
	waited map[string]struct{}
}

// tagList names one repository's list as read by one client (an image
// with a pull secret reads through a client of its own).
type tagList struct {
	client *registry.Client
	repo   string
}

// tagWant is one image's tag list an Application needs.
type tagWant struct {
	client *registry.Client
	repo   registry.Repository
}

// listWait is one list to read and the keys waiting for it.
type listWait struct {
	list   tagList
	want   tagWant
	ctx    context.Context
	maxAge time.Duration
	keys   []string
}

// wait parks key until every list in wants that is not cached yet was
// read, queueing the reads not already queued; it reports false (the
// caller reads the lists itself) when all are cached or key waited before
// in this pass. enqueue puts key back on the queue; ctx bounds the reads.
func (w *tagWaits) wait(ctx context.Context, key string, wants []tagWant, maxAge time.Duration, enqueue func(string)) bool {
	var missing []tagWant
	for _, t := range wants {
		if _, ok := t.client.CachedTags(t.repo, maxAge); !ok {
			missing = append(missing, t)
		}
	}
	if len(missing) == 0 {
		return false
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, ok := w.waited[key]; ok {
		return false
	}
	if w.waited == nil {
		w.waited = map[string]struct{}{}
	}
	if w.lists == nil {
		w.lists, w.left = map[tagList]*listWait{}, map[string]int{}
	}
	w.waited[key] = struct{}{}
	for _, t := range missing {
		l := tagList{t.client, registry.RepoKey(t.repo)}
		lw := w.lists[l]
		if lw == nil {
			lw = &listWait{list: l, want: t, ctx: ctx, maxAge: maxAge}
			w.lists[l] = lw
			w.queue = append(w.queue, lw)
		}
		if !slices.Contains(lw.keys, key) {
			lw.keys = append(lw.keys, key)
			w.left[key]++
		}
	}
	// Readers already running may all be busy on slow lists: the queue
	// gets readers of its own, up to the bound (spares find it empty and
	// stop).
	for range min(maxTagWaitReads-w.readers, len(w.queue)) {
		w.readers++
		go w.read(enqueue)
	}
	return true
}

// read reads queued lists (into their clients' caches; an error is left
// for the waiting reconciles to meet again) until none is left, and
// enqueues the keys whose last list it read.
func (w *tagWaits) read(enqueue func(string)) {
	for {
		w.mu.Lock()
		if len(w.queue) == 0 {
			w.readers--
			w.mu.Unlock()
			return
		}
		lw := w.queue[0]
		w.queue[0] = nil
		w.queue = w.queue[1:]
		w.mu.Unlock()

		if lw.ctx.Err() == nil {
			ctx, cancel := context.WithTimeout(lw.ctx, defaultSelectionTimeout)
			_, _ = lw.want.client.Tags(ctx, lw.want.repo, lw.maxAge)
			cancel()
		}

		w.mu.Lock()
		delete(w.lists, lw.list)
		var ready []string
		for _, k := range lw.keys {
			w.left[k]--
			if w.left[k] <= 0 {
				delete(w.left, k)
				ready = append(ready, k)
			}
		}
		w.enqueuing += len(ready)
		w.mu.Unlock()
		for _, k := range ready {
			enqueue(k)
		}
		w.mu.Lock()
		w.enqueuing -= len(ready)
		w.mu.Unlock()
	}
}

// pending reports whether a waiting key is not back on the queue yet.
func (w *tagWaits) pending() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.left) > 0 || w.enqueuing > 0
}

// passOver forgets which keys waited, once the first pass is over.
func (w *tagWaits) passOver() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.left) == 0 && w.enqueuing == 0 {
		w.waited = nil
	}
}
