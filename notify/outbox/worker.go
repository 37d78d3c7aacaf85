package outbox

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/crowsnest-dev/crowsnest/internal/backoff"

	"github.com/crowsnest-dev/crowsnest/notify"
)

type destQueue struct {
	items  []Record
	active bool
}

// dispatchLocked queues rec on its destination's worker, starting one if
// none runs; o.mu is held. Records already queued are ignored.
func (o *Outbox) dispatchLocked(rec Record) {
	if !o.running || o.stopping || o.queued[rec.ID] {
		return
	}
	if o.loading {
		o.deferred = append(o.deferred, rec)
		return
	}
	o.queued[rec.ID] = true
	o.Metrics.setDepth(len(o.queued))
	key := queueKey(rec)
	q := o.queues[key]
	if q == nil {
		q = &destQueue{}
		o.queues[key] = q
	}
	q.items = append(q.items, rec)
	if !q.active {
		q.active = true
		o.wg.Add(1)
		go o.drain(o.ctx, key, q)
	}
}

// queueKey names the worker of rec: its destination and Application.
func queueKey(rec Record) string { return rec.Destination().String() + "\x00" + rec.App }

func (o *Outbox) drain(ctx context.Context, key string, q *destQueue) {
	defer o.wg.Done()
	for {
		o.mu.Lock()
		if len(q.items) == 0 || ctx.Err() != nil {
			q.active = false
			if len(q.items) == 0 {
				delete(o.queues, key)
			}
			o.mu.Unlock()
			return
		}
		rec := q.items[0]
		q.items = q.items[1:]
		o.mu.Unlock()
		o.deliver(ctx, rec)
	}
}

// deliver attempts rec until it is delivered, dead or the outbox stops.
func (o *Outbox) deliver(ctx context.Context, rec Record) {
	log := o.Logger.With("delivery", rec.ID, "app", rec.App, "trigger", rec.Trigger, "service", rec.Service, "recipient", rec.Recipient)
	if o.confirmed(ctx, log, rec, o.takeRecovered(rec.ID)) {
		return
	}
	unsure := ""
	var attempted time.Time // when the last attempt started
	rateWaits := 0
	for {
		if wait := rec.NextAttempt.Sub(o.Now()); wait > 0 && backoff.Sleep(ctx, wait) != nil {
			return
		}
		// The last attempt may have reached the destination (it timed
		// out waiting for the answer): ask before sending again.
		if unsure != "" && o.confirmed(notify.WithAttemptedSince(ctx, attempted), log, rec, unsure) {
			return
		}
		if err := o.limiter(rec.Service).Wait(ctx); err != nil {
			return
		}
		if !o.acquireSlots(ctx, log) {
			return
		}
		attempted = time.Now()
		receipt, err := o.send(ctx, rec)
		sent := time.Now()
		took := sent.Sub(attempted)
		<-o.sem
		if err != nil {
			<-o.unrecorded
		}
		if err != nil && ctx.Err() != nil {
			return // stopping: the attempt does not count; the record stays pending
		}
		now := o.Now()
		rec.UpdatedAt = now
		if err == nil {
			o.recordDelivered(ctx, log, rec, receipt, now, sent, took)
			return
		}
		var done bool
		if unsure, done = o.recordFailure(ctx, log, &rec, err, now, took, &rateWaits); done {
			return
		}
	}
}

// takeRecovered says why rec's message may already have been sent before
// its first attempt here: "after a restart" when the outbox found it
// pending at start, else "". It forgets the mark.
func (o *Outbox) takeRecovered(id string) string {
	o.mu.Lock()
	defer o.mu.Unlock()
	unsure := ""
	if o.recovered[id] {
		unsure = "after a restart"
	}
	delete(o.recovered, id)
	return unsure
}

// acquireSlots takes an unrecorded slot first, then a send slot: the send
// slot is given back when the send returns, the unrecorded one once a
// delivered message is recorded. It reports false, holding neither, when
// ctx ends first.
func (o *Outbox) acquireSlots(ctx context.Context, log *slog.Logger) bool {
	select {
	case o.unrecorded <- struct{}{}:
	default:
		log.Debug("waiting for sent messages to be recorded before sending another", "unrecorded", o.MaxUnrecorded)
		select {
		case o.unrecorded <- struct{}{}:
		case <-ctx.Done():
			return false
		}
	}
	select {
	case o.sem <- struct{}{}:
	case <-ctx.Done():
		<-o.unrecorded
		return false
	}
	return true
}

func (o *Outbox) send(ctx context.Context, rec Record) (notify.Receipt, error) {
	o.mu.Lock()
	svc := o.Services[rec.Service]
	o.mu.Unlock()
	if svc == nil {
		// Retried: a config reload may bring the service.
		return notify.Receipt{}, fmt.Errorf("no service %q configured", rec.Service)
	}
	ctx, cancel := context.WithTimeout(ctx, o.AttemptTimeout)
	defer cancel()
	return svc.Send(notify.WithRedelivery(notify.WithDeliveryID(ctx, rec.ID), rec.Redeliveries), rec.Notification, rec.Destination())
}

// backoff is RetryBaseDelay doubled per failed attempt, capped at
// RetryMaxDelay, with jitter over its upper half.
func (o *Outbox) backoff(attempts int) time.Duration {
	return backoff.Delay(o.RetryBaseDelay, o.RetryMaxDelay, attempts)
}
