package outbox

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"time"

	"github.com/crowsnest-dev/crowsnest/internal/backoff"
	"github.com/crowsnest-dev/crowsnest/internal/redact"

	"github.com/crowsnest-dev/crowsnest/notify"
)

// recordDelivered records rec as delivered with receipt (sent at sent,
// the attempt took took) and gives back its unrecorded slot.
func (o *Outbox) recordDelivered(ctx context.Context, log *slog.Logger, rec Record, receipt notify.Receipt, now, sent time.Time, took time.Duration) {
	result := ResultDelivered
	if receipt.Skipped {
		result = ResultSkipped
	}
	rec.State, rec.Receipt, rec.LastError = StateDelivered, receipt, ""
	rec.Attempts++
	rec.DoneAt, rec.NextAttempt = now, time.Time{}
	// A crash repeats only messages sent and not yet recorded:
	// at most MaxUnrecorded of them, and with a Journal only
	// those whose answer was not read yet.
	o.Journal.Sent(rec, receipt)
	if o.save(ctx, log, rec) {
		o.Journal.Recorded(rec)
	}
	<-o.unrecorded
	o.settle(rec)
	o.Metrics.attempt(rec.Service, rec.Trigger, result, took)
	if !receipt.Skipped && !rec.ObservedAt.IsZero() {
		o.Metrics.delivered(rec.Service, sent.Sub(rec.ObservedAt))
	}
	log.Debug("notification delivered", "attempts", rec.Attempts, "receipt", receipt.ID)
}

// recordFailure records a failed attempt of rec: a wait for a rate limit
// (counted in rateWaits, not in rec.Attempts), a retry after a backoff,
// or a dead letter. It returns why the next attempt is unsure ("" when
// the message cannot have arrived) and whether rec is done (dead).
func (o *Outbox) recordFailure(ctx context.Context, log *slog.Logger, rec *Record, err error, now time.Time, took time.Duration, rateWaits *int) (unsure string, done bool) {
	// The delivery log shows it; a destination's answer may echo
	// what it was sent (an Authorization header).
	rec.LastError = redact.String(err.Error())
	var rl *notify.RateLimitError
	if errors.As(err, &rl) && *rateWaits < o.MaxRateLimitWaits && rl.RetryAfter <= o.MaxRetryAfter {
		*rateWaits++
		rec.NextAttempt = now.Add(max(rl.RetryAfter, o.RetryBaseDelay/2))
		o.save(ctx, log, *rec)
		o.Metrics.attempt(rec.Service, rec.Trigger, ResultRateLimited, took)
		log.Info("notification rate limited, waiting", "retryAfter", rl.RetryAfter)
		return "", false
	}
	rec.Attempts++
	if mayHaveArrived(err) {
		unsure = "after an attempt that got no answer"
	}
	if notify.IsPermanent(err) || rec.Attempts >= o.MaxAttempts {
		rec.State, rec.DoneAt, rec.NextAttempt = StateDead, now, time.Time{}
		o.save(ctx, log, *rec)
		o.settle(*rec)
		o.Metrics.attempt(rec.Service, rec.Trigger, ResultDead, took)
		log.Warn("notification dead-lettered", "attempts", rec.Attempts, "err", err)
		if o.DeadLetters != nil {
			o.DeadLetters.DeadLettered(*rec)
		}
		return unsure, true
	}
	rec.NextAttempt = now.Add(o.backoff(rec.Attempts))
	o.save(ctx, log, *rec)
	o.Metrics.attempt(rec.Service, rec.Trigger, ResultFailed, took)
	log.Debug("notification failed, will retry", "attempts", rec.Attempts, "next", rec.NextAttempt, "err", err)
	return unsure, false
}

// mayHaveArrived reports whether a failed send may have delivered its
// message all the same: anything but a refused connection or an answer
// that says it was not taken (rate limited, or a permanent refusal). A
// timeout waiting for the answer is the case that matters.
func mayHaveArrived(err error) bool {
	var rl *notify.RateLimitError
	if errors.As(err, &rl) || notify.IsPermanent(err) {
		return false
	}
	var op *net.OpError
	return !errors.As(err, &op) || op.Op != "dial"
}

// save persists rec, even while stopping, so a finished delivery is not
// sent again; an early send's state waits for its record to be created.
// A failed write (a burst of conflicts on the store's ConfigMap, an
// apiserver restart) is retried with backoff while the record stays held:
// left pending in the store, a rescan would send it again. A record the
// store does not have (the Create of an early send failed, or it was
// deleted) is created as it stands, again while the store is full: the
// record stays held meanwhile, so nothing sends it again. It gives up
// only when the outbox stops and one more try fails; a sent delivery is
// then sent again after the restart (the at-least-once window) unless the
// Journal has it. It reports whether the store took rec.
func (o *Outbox) save(ctx context.Context, log *slog.Logger, rec Record) bool {
	o.awaitCreate(rec.ID)
	delay := saveRetryBaseDelay
	existed := false
	for {
		wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), storeWriteTimeout)
		err := o.Store.Update(wctx, rec)
		if errors.Is(err, ErrNotFound) && !existed {
			// The Create of an early send failed, or the record was
			// deleted meanwhile: write it as it stands. One created
			// meanwhile by someone else is updated once more.
			var made bool
			if made, err = o.Store.Create(wctx, rec); err == nil && !made {
				existed = true
				cancel()
				continue
			}
		}
		cancel()
		switch {
		case err == nil:
			return true
		case errors.Is(err, ErrNotFound) || ctx.Err() != nil:
			log.Error("recording delivery state failed", "state", rec.State, "err", err)
			return false
		}
		log.Warn("recording delivery state failed; retrying", "state", rec.State, "err", err, "retryIn", delay)
		_ = backoff.Sleep(ctx, delay) // cancelled: one more try above, then give up
		delay = min(2*delay, saveRetryMaxDelay)
	}
}

// settle forgets a record whose terminal state is saved, and queues the
// redelivery asked for meanwhile. It runs after the save: until then the
// store says pending, and a rescan must see the record as held.
func (o *Outbox) settle(rec Record) {
	o.mu.Lock()
	defer o.mu.Unlock()
	delete(o.queued, rec.ID)
	if o.settled != nil {
		o.settled[rec.ID] = true
	}
	if o.enqueuing[rec.ID] > 0 {
		o.settledEnqueuing[rec.ID] = true
	}
	o.wakeCompaction()
	o.Metrics.setDepth(len(o.queued))
	if next, ok := o.again[rec.ID]; ok {
		delete(o.again, rec.ID)
		o.dispatchLocked(next)
	}
}
