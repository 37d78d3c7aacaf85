package outbox

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/crowsnest-dev/crowsnest/notify"
)

// ErrPending is returned by Redeliver for a delivery still in progress.
var ErrPending = errors.New("delivery is still pending")

// Redeliver sends a delivered or dead-lettered delivery again, with a
// fresh attempt count. The record is marked pending in the store in one
// atomic change, so a delivery still pending is refused (ErrPending, with
// the record) even when another process works on it. An outbox that is
// not running (the CLI's) only marks it: the running one picks it up at
// its next rescan.
func (o *Outbox) Redeliver(ctx context.Context, id string) (Record, error) {
	o.init()
	rec, err := o.Store.Modify(ctx, id, func(r *Record) error {
		if r.State == StatePending {
			return ErrPending
		}
		r.State, r.Attempts, r.LastError = StatePending, 0, ""
		r.NextAttempt, r.DoneAt, r.Receipt = time.Time{}, time.Time{}, notify.Receipt{}
		r.Redeliveries++
		r.UpdatedAt = o.Now()
		return nil
	})
	switch {
	case errors.Is(err, ErrPending):
		return rec, fmt.Errorf("redelivering %s: %w", id, ErrPending)
	case err != nil:
		return Record{}, fmt.Errorf("redelivering %s: %w", id, err)
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.queued[rec.ID] {
		// The previous delivery is saved as finished but not settled yet.
		o.again[rec.ID] = rec
		return rec, nil
	}
	o.dispatchLocked(rec)
	return rec, nil
}

// MinIDPrefix is the shortest delivery ID prefix Find accepts: shorter
// ones match too much to be worth typing.
const MinIDPrefix = 4

// ErrAmbiguousID is returned by Find for a prefix of several IDs.
var ErrAmbiguousID = errors.New("delivery ID prefix is ambiguous")

// Find returns the record whose ID is idOrPrefix or starts with it, as a
// person copies it from the delivery log. No match is ErrNotFound; a
// prefix of several IDs is ErrAmbiguousID, naming them.
func (o *Outbox) Find(ctx context.Context, idOrPrefix string) (Record, error) {
	o.init()
	p := strings.ToLower(strings.TrimSpace(idOrPrefix))
	if len(p) < MinIDPrefix || len(p) > 2*idBytes || strings.Trim(p, "0123456789abcdef") != "" {
		return Record{}, fmt.Errorf("delivery ID %q: want %d to %d hexadecimal digits, the ID or its start", idOrPrefix, MinIDPrefix, 2*idBytes)
	}
	if len(p) == 2*idBytes {
		rec, err := o.Store.Get(ctx, p)
		if err != nil {
			return Record{}, fmt.Errorf("delivery %s: %w", p, err)
		}
		return rec, nil
	}
	all, err := o.Store.List(ctx, ListOptions{})
	if err != nil {
		return Record{}, fmt.Errorf("reading the delivery log: %w", err)
	}
	var found []Record
	for i := range all {
		if strings.HasPrefix(all[i].ID, p) {
			found = append(found, all[i])
		}
	}
	switch len(found) {
	case 0:
		return Record{}, fmt.Errorf("delivery %s: %w", idOrPrefix, ErrNotFound)
	case 1:
		return found[0], nil
	}
	ids := make([]string, len(found))
	for i := range found {
		ids[i] = found[i].ID
	}
	return Record{}, fmt.Errorf("%w: %s matches %s", ErrAmbiguousID, idOrPrefix, strings.Join(ids, ", "))
}
