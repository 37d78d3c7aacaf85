package collect

import (
	"maps"
	"slices"
	"time"

	gitwb "github.com/crowsnest-dev/crowsnest/writeback/git"
)

// group is pending Applications that share repositories, directly or
// through one another: they go in one batch, so that each Application's
// changes are written together and each repository is written by one
// batch at a time.
type group struct {
	keys    []string
	since   time.Time // the earliest queued.since of its Applications
	blocked bool      // one of its repositories is being written
}

// takeFree takes the first group none of whose repositories is being
// written and which may go now: the Engine is idle, or one of its
// Applications waited maxDelay. Without one, held is how long until a
// group held for the Engine may go anyway (zero: none is held). b.mu is
// held.
func (b *Batcher) takeFree(now time.Time, idle bool, maxDelay time.Duration) (_ Batch, held time.Duration) {
	for _, g := range b.groups() {
		if g.blocked {
			continue
		}
		waited := now.Sub(g.since)
		if idle || waited >= maxDelay {
			return b.take(g.keys), 0
		}
		if left := maxDelay - waited; held == 0 || left < held {
			held = left
		}
	}
	return Batch{}, held
}

// groups sorts the pending Applications into groups (union-find over
// their repositories), in the order of their first key.
func (b *Batcher) groups() []*group {
	parent := map[string]string{}
	find := func(x string) string {
		for parent[x] != x {
			parent[x] = parent[parent[x]]
			x = parent[x]
		}
		return x
	}
	keys := slices.Sorted(maps.Keys(b.pending))
	for _, k := range keys {
		node := "\x00" + k // no repository ID starts with NUL
		parent[node] = node
		for _, r := range b.pending[k].repos {
			if _, ok := parent[r]; !ok {
				parent[r] = r
			}
			parent[find(r)] = find(node)
		}
	}
	byRoot := map[string]*group{}
	var out []*group
	for _, k := range keys {
		root := find("\x00" + k)
		g := byRoot[root]
		if g == nil {
			g = &group{}
			byRoot[root] = g
			out = append(out, g)
		}
		q := b.pending[k]
		g.keys = append(g.keys, k)
		if g.since.IsZero() || q.since.Before(g.since) {
			g.since = q.since
		}
		for _, r := range q.repos {
			g.blocked = g.blocked || b.busy[r]
		}
	}
	return out
}

// take takes the Applications keys as a batch: their repositories count
// as being written, and they as Pending, until the batch is Settled. b.mu
// is held.
func (b *Batcher) take(keys []string) Batch {
	if len(keys) == 0 {
		return Batch{}
	}
	batch := Batch{pending: make(map[string][]gitwb.Change, len(keys))}
	for _, k := range keys {
		q := b.pending[k]
		batch.pending[k] = q.changes
		batch.repos = append(batch.repos, q.repos...)
		delete(b.pending, k)
	}
	slices.Sort(batch.repos)
	batch.repos = slices.Compact(batch.repos)
	for _, r := range batch.repos {
		b.busy[r] = true
	}
	b.batches++
	b.writing += len(keys)
	b.oldest = time.Time{}
	for _, q := range b.pending {
		if b.oldest.IsZero() || q.since.Before(b.oldest) {
			b.oldest = q.since
		}
	}
	return batch
}
