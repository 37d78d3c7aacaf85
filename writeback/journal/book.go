package journal

import (
	"context"
	"hash/fnv"
	"slices"
	"sync"
	"time"
)

// Book is one process's view of a Store: loaded at its first use (a
// standby reconciles only once it leads, so it sees what the previous
// leader recorded) and written through. It remembers which keys' intents
// from before this process were looked at (Previous gives each once) and
// which Git ones wait for a batch to say whether they were written
// (Recovering, Take).
type Book struct {
	Store Store

	// keyMu serialises the writes of one key (a stripe of keys), each
	// with its read of current: a Settle of an older intent saved after
	// the Record of a newer one would leave the older one in the Store,
	// and a restart would not recover the newer write.
	keyMu   [keyStripes]sync.Mutex
	mu      sync.Mutex
	loaded  bool
	current map[string]Intent
	// checked holds the keys whose intent from before this process was
	// looked at; recovering holds Git ones waiting for their batch.
	checked    map[string]bool
	recovering map[string]Intent
}

// keyStripes keys' writes may run at once; writes of different keys are
// batched by the Store (cmbatch), so they must not wait for each other.
const keyStripes = 64

// lockKey locks key's stripe and returns its unlock.
func (b *Book) lockKey(key string) func() {
	h := fnv.New32a()
	_, _ = h.Write([]byte(key))
	m := &b.keyMu[h.Sum32()%keyStripes]
	m.Lock()
	return m.Unlock
}

// load reads the journal once; one that cannot be read is read again
// at the next call.
func (b *Book) load(ctx context.Context) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.loaded {
		return nil
	}
	all, err := b.Store.LoadAll(ctx)
	if err != nil {
		return err
	}
	b.current, b.loaded = all, true
	b.checked, b.recovering = map[string]bool{}, map[string]Intent{}
	return nil
}

// Previous returns, the first time key is asked in this process, the
// intent a previous process recorded for it within window before now and
// did not mark Done; nil otherwise.
func (b *Book) Previous(ctx context.Context, key string, now time.Time, window time.Duration) (*Intent, error) {
	if err := b.load(ctx); err != nil {
		return nil, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.checked[key] {
		return nil, nil
	}
	b.checked[key] = true
	in, ok := b.current[key]
	if !ok || in.Done || now.Sub(in.At) > window {
		return nil, nil
	}
	return &in, nil
}

// Record saves in as key's intent, unless the one recorded writes the
// same values. A recovering intent of key that in does not repeat is
// forgotten: the new write supersedes it.
func (b *Book) Record(ctx context.Context, key string, in Intent) error {
	if err := b.load(ctx); err != nil {
		return err
	}
	defer b.lockKey(key)()
	b.mu.Lock()
	cur, ok := b.current[key]
	b.mu.Unlock()
	if ok && sameWrite(cur, in) {
		return nil
	}
	if in.Declined == nil {
		in.Declined = cur.Declined
	}
	if err := b.Store.Save(ctx, key, &in); err != nil {
		return err
	}
	b.mu.Lock()
	b.current[key] = in
	if rec, ok := b.recovering[key]; ok && !sameWrite(rec, in) {
		delete(b.recovering, key)
	}
	b.mu.Unlock()
	return nil
}

// Decline records versions of key's images a person declined, each
// replacing what was declined of its image before.
func (b *Book) Decline(ctx context.Context, key string, declined []Declined) error {
	if err := b.load(ctx); err != nil {
		return err
	}
	defer b.lockKey(key)()
	b.mu.Lock()
	in, ok := b.current[key]
	b.mu.Unlock()
	if !ok {
		// No write of key recorded (the journal was emptied): a record
		// with nothing to recover.
		in = Intent{Method: "git", Done: true}
	}
	in.Declined = slices.Clone(in.Declined)
	for _, d := range declined {
		in.Declined = slices.DeleteFunc(in.Declined, func(x Declined) bool { return x.Image == d.Image })
		in.Declined = append(in.Declined, d)
	}
	if err := b.Store.Save(ctx, key, &in); err != nil {
		return err
	}
	b.mu.Lock()
	b.current[key] = in
	b.mu.Unlock()
	return nil
}

// DeclinedOf returns the versions of key a person declined.
func (b *Book) DeclinedOf(ctx context.Context, key string) ([]Declined, error) {
	if err := b.load(ctx); err != nil {
		return nil, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.current[key].Declined), nil
}

// Forget drops key's intent (its Application is gone).
func (b *Book) Forget(ctx context.Context, key string) error {
	if err := b.load(ctx); err != nil {
		return err
	}
	defer b.lockKey(key)()
	b.mu.Lock()
	_, ok := b.current[key]
	delete(b.recovering, key)
	b.mu.Unlock()
	if !ok {
		return nil
	}
	if err := b.Store.Save(ctx, key, nil); err != nil {
		return err
	}
	b.mu.Lock()
	delete(b.current, key)
	b.mu.Unlock()
	return nil
}

// Recovering keeps in, key's intent from a previous process, until a
// batch says whether it was written (Take).
func (b *Book) Recovering(key string, in Intent) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.recovering[key] = in
}

// Take returns and forgets key's recovering intent when it writes exactly
// writes.
func (b *Book) Take(key string, writes []Change) (Intent, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	rec, ok := b.recovering[key]
	if !ok || !rec.Writes(writes) {
		return Intent{}, false
	}
	delete(b.recovering, key)
	return rec, true
}

// Settle marks key's intent Done when it writes exactly writes (a newer
// write may have replaced it meanwhile) and is not Done already.
func (b *Book) Settle(ctx context.Context, key string, writes []Change) error {
	defer b.lockKey(key)()
	b.mu.Lock()
	in, ok := b.current[key]
	b.mu.Unlock()
	if !ok || !in.Writes(writes) || in.Done {
		return nil
	}
	in.Done = true
	if err := b.Store.Save(ctx, key, &in); err != nil {
		return err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if cur, ok := b.current[key]; ok && sameWrite(cur, in) {
		b.current[key] = in
	}
	return nil
}

// sameWrite reports whether two intents write the same values.
func sameWrite(a, b Intent) bool {
	return a.Method == b.Method && slices.Equal(a.Changes, b.Changes)
}

// Writes reports whether writes (images and the values written, From
// unused) are exactly in's images and new values, each once.
func (in *Intent) Writes(writes []Change) bool {
	want := map[string]string{}
	for _, c := range in.Changes {
		want[c.Image] = c.To
	}
	for _, w := range writes {
		if v, ok := want[w.Image]; !ok || v != w.To {
			return false
		}
	}
	return len(writes) == len(want)
}
