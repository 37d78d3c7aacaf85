package outbox

import (
	"context"
	"log/slog"
	"strings"
	"time"

	"github.com/crowsnest-dev/crowsnest/notify"
)

// confirmed records rec as delivered when the Journal says its message
// was sent, or, when it may have been sent (unsure says when: after a
// restart, or after an attempt that got no answer; empty when it cannot
// have been), when its destination says it has the message (notify.Confirmer).
// It reports whether rec needs no send.
func (o *Outbox) confirmed(ctx context.Context, log *slog.Logger, rec Record, unsure string) bool {
	o.mu.Lock()
	svc := o.Services[rec.Service]
	o.mu.Unlock()
	if receipt, ok := o.Journal.Lookup(rec); ok {
		rec.Attempts = max(rec.Attempts, 1) // it was sent
		o.recordFound(ctx, log, rec, receipt, 0, "sent before a restart (local journal)",
			"notification sent before a restart (local journal), recorded, not sent again")
		return true
	}
	if p, ok := svc.(pacedService); ok {
		svc = p.Service
	}
	c, ok := svc.(notify.Confirmer)
	if unsure == "" || !ok {
		return false
	}
	cctx, cancel := context.WithTimeout(ctx, o.AttemptTimeout)
	start := time.Now()
	receipt, found, err := c.Sent(cctx, rec.sending())
	took := time.Since(start)
	cancel()
	switch {
	case err != nil:
		log.Info("could not look for a message that may have been sent; sending it", "when", unsure, "err", err)
		return false
	case !found:
		return false
	}
	o.recordFound(ctx, log, rec, receipt, took, "found at the destination "+unsure,
		"notification found at its destination "+unsure+", not sent again")
	return true
}

// recordFound records rec as delivered with receipt without sending it:
// its message was sent before (how says where that was learned).
func (o *Outbox) recordFound(ctx context.Context, log *slog.Logger, rec Record, receipt notify.Receipt, took time.Duration, how, msg string) {
	now := o.Now()
	receipt.Detail = strings.TrimSpace(how + ", not sent again; " + receipt.Detail)
	rec.State, rec.Receipt, rec.LastError = StateDelivered, receipt, ""
	rec.UpdatedAt, rec.DoneAt, rec.NextAttempt = now, now, time.Time{}
	if o.save(ctx, log, rec) {
		o.Journal.Recorded(rec)
	}
	o.settle(rec)
	o.Metrics.attempt(rec.Service, rec.Trigger, ResultConfirmed, took)
	log.Info(msg, "receipt", receipt.ID)
}
