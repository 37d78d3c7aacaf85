package controller

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/google/go-containerregistry/pkg/name"

	"github.com/crowsnest-dev/crowsnest/registry"
)

// tagWaits lets the first pass's reconciles wait for a tag list without
// holding a worker. At a cold start every repository is unread and the
// registry's rate limit paces the lists (500 repositories at 20/s take
// 20 s): a worker blocked on one repository's list cannot patch the
// Applications whose lists are already in. A reconcile that finds a list
// missing starts it in the background and hands its worker back
// (Result.Waiting); the list's arrival puts the Application back on the
// queue. Each Application waits so at most once per pass: when it comes
// back and a list is still missing (it failed, or another image's list is
// slower) it reads it as before, and a failure takes the usual retries.
type tagWaits struct {
	mu sync.Mutex
	// lists holds, per list being read (client and repository), the
	// Application keys waiting for it.
	lists map[tagList][]string
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
	repo   name.Repository
}

// wait parks key until every list in wants that is not cached yet was
// read, starting the reads not already running; it reports false (the
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
		w.waited, w.lists = map[string]struct{}{}, map[tagList][]string{}
	}
	w.waited[key] = struct{}{}
	for _, t := range missing {
		l := tagList{t.client, registry.RepoKey(t.repo)}
		keys, running := w.lists[l]
		w.lists[l] = append(keys, key)
		if !running {
			go w.read(ctx, l, t, maxAge, enqueue)
		}
	}
	return true
}

// read lists t's tags (into the client's cache; an error is left for the
// waiting reconciles to meet again) and enqueues the keys waiting for it.
func (w *tagWaits) read(ctx context.Context, l tagList, t tagWant, maxAge time.Duration, enqueue func(string)) {
	ctx, cancel := context.WithTimeout(ctx, defaultSelectionTimeout)
	_, _ = t.client.Tags(ctx, t.repo, maxAge)
	cancel()
	// The keys are enqueued before the list is forgotten, so pending
	// holds until they are on the queue (Engine.Idle); keys that join
	// meanwhile are enqueued in the next round.
	for done := 0; ; {
		w.mu.Lock()
		keys := slices.Clone(w.lists[l][done:])
		if len(keys) == 0 {
			delete(w.lists, l)
			w.mu.Unlock()
			return
		}
		w.mu.Unlock()
		for _, k := range keys {
			enqueue(k)
		}
		done += len(keys)
	}
}

// pending reports whether a list is being read for a waiting key.
func (w *tagWaits) pending() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.lists) > 0
}

// passOver forgets which keys waited, once the first pass is over.
func (w *tagWaits) passOver() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.lists) == 0 {
		w.waited = nil
	}
}
