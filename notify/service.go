package notify

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/crowsnest-dev/crowsnest/internal/retryafter"
)

// Destination is where one delivery goes: a configured service instance
// ("slack", "webhook.github", "email") and a recipient in its terms (a
// Slack channel, a webhook name's target, email addresses).
type Destination struct {
	Service   string `json:"service"`
	Recipient string `json:"recipient,omitempty"`
}

// String is "service:recipient", the key deliveries are serialized on.
func (d Destination) String() string { return d.Service + ":" + d.Recipient }

// Receipt is what a service reports after a send, for the delivery log.
type Receipt struct {
	// ID identifies the sent message: a Slack ts, an SMTP Message-ID, an
	// HTTP status line.
	ID string `json:"id,omitempty"`
	// Skipped says the notification had nothing for this service.
	Skipped bool   `json:"skipped,omitempty"`
	Detail  string `json:"detail,omitempty"`
}

// Service sends a rendered notification to one destination. Errors must
// not carry secrets; wrap a terminal failure with Permanent so the outbox
// dead-letters it at once.
type Service interface {
	Send(ctx context.Context, n Notification, d Destination) (Receipt, error)
}

// PermanentError marks a failure retrying cannot fix (a 4xx, a rejected
// recipient, a bad payload).
type PermanentError struct{ Err error }

func (e *PermanentError) Error() string { return e.Err.Error() }
func (e *PermanentError) Unwrap() error { return e.Err }

// Permanent wraps err as a PermanentError.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return &PermanentError{Err: err}
}

// IsPermanent reports whether err is marked Permanent.
func IsPermanent(err error) bool {
	var p *PermanentError
	return errors.As(err, &p)
}

// RateLimitError says the destination asked crowsnest to wait: the outbox
// tries again after RetryAfter without counting a failed attempt.
type RateLimitError struct {
	Service    string
	RetryAfter time.Duration
}

func (e *RateLimitError) Error() string {
	return fmt.Sprintf("%s: rate limited, retry after %s", e.Service, e.RetryAfter)
}

// redactURL keeps a URL's scheme and host: paths and queries of webhook
// URLs often are the secret (Slack and Teams incoming webhooks).
func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return "<url>"
	}
	return u.Scheme + "://" + u.Host + "/..."
}

// cleanURLError drops the URL net/http puts in its errors, keeping the
// operation and cause.
func cleanURLError(err error, raw string) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return fmt.Errorf("%s %s: %w", ue.Op, redactURL(raw), ue.Err)
	}
	return err
}

// ThreadStore remembers, per grouping key, the Slack message that started
// a thread, so replies and updates find it after a restart.
type ThreadStore interface {
	// Thread returns the reference saved under key, "" when none.
	Thread(ctx context.Context, key string) (string, error)
	SetThread(ctx context.Context, key, ref string) error
}

// Confirmer is a Service that can look at its destination for a message
// an earlier process sent but did not record as delivered (it was killed
// between the two). The outbox asks it before sending again a delivery it
// found pending at start.
type Confirmer interface {
	Service
	// Sent reports whether m's message is at its destination, with the
	// receipt to record. False or an error means it is sent (again).
	Sent(ctx context.Context, m Sending) (Receipt, bool, error)
}

// Sending is what a Confirmer looks for: one delivery's message as the
// outbox recorded it, in the terms of a sender, which knows nothing of
// the outbox's records.
type Sending struct {
	// ID is the delivery ID, the same for every attempt (WithDeliveryID).
	ID string
	// Redeliveries counts the redeliveries by hand: each is a message of
	// its own, which must not be mistaken for the first.
	Redeliveries int
	Recipient    string
	Notification Notification
	// MaybeSent says an earlier process may have sent the message before
	// its record was created (the record was created only now).
	MaybeSent bool
	// CreatedAt and UpdatedAt are when the record was created and last
	// saved.
	CreatedAt time.Time
	UpdatedAt time.Time
}

// WithAttemptedSince returns ctx for a Confirmer's Sent asking about a
// message whose last attempt started at t: what the Confirmer learned of
// the destination before t (a cached scan) cannot answer.
func WithAttemptedSince(ctx context.Context, t time.Time) context.Context {
	return context.WithValue(ctx, attemptedSinceKey{}, t)
}

// AttemptedSince returns the time WithAttemptedSince put in ctx (zero
// when none).
func AttemptedSince(ctx context.Context) time.Time {
	t, _ := ctx.Value(attemptedSinceKey{}).(time.Time)
	return t
}

type attemptedSinceKey struct{}

type deliveryIDKey struct{}

// DeliveryHeader is the HTTP header that carries the delivery ID
// (WithDeliveryID), the same on every attempt of a message, for receivers
// to drop a repeat.
const DeliveryHeader = "X-Crowsnest-Delivery"

type redeliveryKey struct{}

// WithRedelivery returns ctx carrying how many times the delivery being
// sent was redelivered by hand: each redelivery is a message of its own,
// which Confirmer must not mistake for the first.
func WithRedelivery(ctx context.Context, n int) context.Context {
	return context.WithValue(ctx, redeliveryKey{}, n)
}

// RedeliveryFrom returns the redelivery count ctx carries (0 when none).
func RedeliveryFrom(ctx context.Context) int {
	n, _ := ctx.Value(redeliveryKey{}).(int)
	return n
}

// WithDeliveryID returns ctx carrying the outbox delivery ID of the message
// being sent. The ID is the same for every attempt of a delivery, so a
// destination that sees it twice (crowsnest killed after the send and
// before recording it) can drop the repeat: webhooks get it in
// DeliveryHeader, email in the Message-ID.
func WithDeliveryID(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, deliveryIDKey{}, id)
}

// DeliveryIDFrom returns the delivery ID ctx carries, or "".
func DeliveryIDFrom(ctx context.Context) string {
	id, _ := ctx.Value(deliveryIDKey{}).(string)
	return id
}

// RedactURL is a URL for errors and logs: scheme and host only, since
// paths and queries of service URLs often hold the secret (incoming
// webhook paths, bot tokens, API keys).
func RedactURL(raw string) string { return redactURL(raw) }

// CleanURLError is err with the URL net/http put in it redacted.
func CleanURLError(err error, raw string) error { return cleanURLError(err, raw) }

// RetryAfter reads how long a 429 answer asks to wait: Retry-After
// (seconds or an HTTP date), else X-RateLimit-Reset (a Unix time, as
// GitHub sends). It reports false when the answer says nothing.
func RetryAfter(h http.Header, now time.Time) (time.Duration, bool) {
	return retryafter.FromHeader(h, now)
}
