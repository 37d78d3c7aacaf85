package outbox

import (
	"context"
	"errors"
	"fmt"
)

// pendingCreate is the Create of an early send's record; done closes
// when it returned.
type pendingCreate struct {
	done chan struct{}
}

// Enqueue records d and hands it to its destination's worker, which may
// send it while the record is being written (an early send) unless
// d.MaybeSent. The ID comes from d.Key: a key already recorded is not
// enqueued again (created is false and the existing record returned; when
// the store knew the ID but its record is gone since, only the delivery,
// with no state). Before Start, the delivery waits in the store.
func (o *Outbox) Enqueue(ctx context.Context, d Delivery) (rec Record, created bool, err error) {
	o.init()
	if d.Key == "" || d.Service == "" {
		return Record{}, false, errors.New("enqueue: a delivery needs a key and a service")
	}
	d.ID = DeliveryID(d.Key)
	now := o.Now()
	rec = Record{Delivery: d, State: StatePending, CreatedAt: now, UpdatedAt: now}
	early := !d.MaybeSent && o.sendEarly(rec)
	if d.MaybeSent {
		// Marked before the record exists: a rescan may dispatch it
		// before this call does, and must ask the destination too.
		o.mu.Lock()
		if o.recovered == nil {
			o.recovered = map[string]bool{}
		}
		o.recovered[rec.ID] = true
		o.mu.Unlock()
	}
	if !early {
		defer o.enqueue(rec.ID)()
	}
	created, err = o.Store.Create(ctx, rec)
	if early {
		o.created(rec.ID)
	}
	if err != nil {
		return Record{}, false, fmt.Errorf("recording delivery %s to %s: %w", d.ID, d.Destination(), err)
	}
	if !created {
		existing, err := o.Store.Get(ctx, d.ID)
		if errors.Is(err, ErrNotFound) {
			// The store still knew the ID (its index of the log), and the
			// record is gone: it was finished, and the key was used. An
			// error here would be retried forever.
			o.Logger.Warn("a notification's record is gone from the store while its ID is still known; taken as sent before",
				"delivery", d.ID, "app", d.App, "service", d.Service, "recipient", d.Recipient)
			return Record{Delivery: d}, false, nil
		}
		if err != nil {
			return Record{}, false, fmt.Errorf("reading delivery %s: %w", d.ID, err)
		}
		return existing, false, nil
	}
	if !early {
		o.mu.Lock()
		if !o.settledEnqueuing[rec.ID] {
			o.dispatchLocked(rec)
		}
		o.mu.Unlock()
	}
	return rec, true, nil
}

// enqueue notes an Enqueue of id writing its record, and returns its end.
func (o *Outbox) enqueue(id string) (done func()) {
	o.mu.Lock()
	o.enqueuing[id]++
	o.mu.Unlock()
	return func() {
		o.mu.Lock()
		defer o.mu.Unlock()
		o.enqueuing[id]--
		if o.enqueuing[id] <= 0 {
			delete(o.enqueuing, id)
			delete(o.settledEnqueuing, id)
		}
	}
}

// sendEarly dispatches rec before its record is written when the store
// is sure it holds none with its ID and no worker holds it, and marks its
// Create pending (see created).
func (o *Outbox) sendEarly(rec Record) bool {
	p, ok := o.Store.(Peeker)
	if !ok {
		return false
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if !o.running || o.stopping || o.loading || o.queued[rec.ID] || o.creating[rec.ID] != nil || !p.Absent(rec.ID, rec.App) {
		return false
	}
	o.creating[rec.ID] = &pendingCreate{done: make(chan struct{})}
	o.dispatchLocked(rec)
	return true
}

// created ends an early send's pending Create.
func (o *Outbox) created(id string) {
	o.mu.Lock()
	pc := o.creating[id]
	delete(o.creating, id)
	o.mu.Unlock()
	if pc != nil {
		close(pc.done)
	}
}

// awaitCreate returns once an early send's record was created (or its
// Create failed: save writes it then); at once for any other delivery.
// The Create's write is bounded, so this is too.
func (o *Outbox) awaitCreate(id string) {
	o.mu.Lock()
	pc := o.creating[id]
	o.mu.Unlock()
	if pc != nil {
		o.Logger.Debug("message sent before its record exists; its state waits for the record", "delivery", id)
		<-pc.done
	}
}
