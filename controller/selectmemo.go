package controller

import (
	"context"
	"crypto/sha256"
	"fmt"
	"sync"

	"github.com/crowsnest-dev/crowsnest/registry"
	"github.com/crowsnest-dev/crowsnest/registry/policy"
)

// maxSelectionMemo bounds the selections remembered; past it the memo
// starts afresh.
const maxSelectionMemo = 16384

// selectionMemo remembers, per registry client, image and policy, the
// last selection and the tag list it was made from. Applications that
// share an image and policy (often dozens; a wave of them on a cold
// start) then select once per tag list instead of once each: a selection
// parses and ranks every tag. Only policies that read no metadata are
// remembered (semver, alphabetical, without platforms), whose selection
// depends on the tags alone. A tag list is the client's cached slice,
// replaced (never changed) when listed again, so the same slice means
// the same list.
type selectionMemo struct {
	mu sync.Mutex
	m  map[memoKey]*memoEntry
}

// memoKey is of fixed size: the image and the spec (whose patterns an
// annotation author writes, up to policy's limits) are kept as a hash.
type memoKey struct {
	client *registry.Client
	sum    [sha256.Size]byte
}

type memoEntry struct {
	tags []string
	res  policy.Result
	err  error
}

// keySum hashes an image and its policy spec into a memo key.
func keySum(image string, s policy.Spec) [sha256.Size]byte {
	h := sha256.New()
	// Quoted, so no field's content can pass for a separator.
	fmt.Fprintf(h, "%q", append([]string{image, s.Strategy, s.Constraint, s.AllowTags, s.Extract, s.ExtractOrder}, s.IgnoreTags...))
	var sum [sha256.Size]byte
	h.Sum(sum[:0])
	return sum
}

func sameSlice(a, b []string) bool {
	return len(a) == len(b) && len(a) > 0 && &a[0] == &b[0]
}

// selectTag returns pol's selection from tags, remembered for the same
// client, image, spec and tag list. A selection that verifies signatures
// is not remembered (its key set is not in the key): the registry client
// caches each digest's verification by key set instead.
func (m *selectionMemo) selectTag(ctx context.Context, client *registry.Client, image string, spec policy.Spec, pol *policy.Policy,
	tags []string, facts policy.Facts) (policy.Result, error) {
	if pol.NeedsMetadata() || facts.Verify != nil {
		return pol.SelectWith(ctx, tags, facts)
	}
	key := memoKey{client: client, sum: keySum(image, spec)}
	m.mu.Lock()
	if e := m.m[key]; e != nil && sameSlice(e.tags, tags) {
		m.mu.Unlock()
		return e.res, e.err
	}
	m.mu.Unlock()
	res, err := pol.SelectWith(ctx, tags, facts)
	if ctx.Err() != nil {
		return res, err // a cancelled selection says nothing about the tags
	}
	m.mu.Lock()
	if m.m == nil || len(m.m) >= maxSelectionMemo {
		m.m = map[memoKey]*memoEntry{}
	}
	m.m[key] = &memoEntry{tags: tags, res: res, err: err}
	m.mu.Unlock()
	return res, err
}
