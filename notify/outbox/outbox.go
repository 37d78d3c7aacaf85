package outbox

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"

	"github.com/crowsnest-dev/crowsnest/internal/backoff"
	"github.com/crowsnest-dev/crowsnest/internal/redact"

	"github.com/crowsnest-dev/crowsnest/notify"
)

// Outbox defaults. Five attempts with 2s..5m backoff ride out a
// destination's restart or a short outage (about ten minutes in all)
// without hammering it. Slack allows about one message per second per
// channel with bursts; five per second per service with a burst of ten
// keeps a deployment wave under every service's limits. A minute per
// attempt covers the slowest SMTP relay; 32 sends in flight bound the
// sockets a storm opens while one hanging destination holds only one;
// 512 messages sent and not yet recorded keep a wave of a thousand
// Applications going while a message waits for two store writes (its
// record, then its delivered state) of a few hundred milliseconds each
// (128 held bench round 5 to a p50 of half a second), and bound what a
// crash can make the next process send again.
// Rescanning every five seconds lets `crowsnest notify redeliver` answer
// within moments at the cost of one read per outbox ConfigMap.
const (
	DefaultMaxAttempts       = 5
	DefaultRetryBaseDelay    = 2 * time.Second
	DefaultRetryMaxDelay     = 5 * time.Minute
	DefaultAttemptTimeout    = time.Minute
	DefaultMaxInFlight       = 32
	DefaultMaxUnrecorded     = 512
	DefaultServiceRate       = 5
	DefaultServiceBurst      = 10
	DefaultMaxRetryAfter     = 10 * time.Minute
	DefaultMaxRateLimitWaits = 10
	DefaultRescanInterval    = 5 * time.Second
	// DefaultCompactDelay gathers the deliveries settled within a quarter
	// second into one compaction of the store.
	DefaultCompactDelay = 250 * time.Millisecond
	storeWriteTimeout   = 10 * time.Second
	// A delivery's state is saved again after 50ms, doubling to 5s, until
	// the store takes it.
	saveRetryBaseDelay = 50 * time.Millisecond
	saveRetryMaxDelay  = 5 * time.Second
)

// RateLimit paces sends to one service.
type RateLimit struct {
	// PerSecond is the sustained rate; negative means unlimited.
	PerSecond float64
	Burst     int
}

// Outbox records deliveries in a Store and delivers them asynchronously.
// A new delivery the store is sure it does not hold (Peeker) is sent
// while its record is being written (an early send): the message does
// not wait for a write to the apiserver, and nothing about it is saved
// before its record exists. Other deliveries are sent once recorded. One
// worker per destination (service+recipient) and
// Application keeps the messages about an Application in order at each
// destination, while a bounded number of sends run at once across
// Applications and destinations. (One worker per destination held a
// deployment wave of a thousand Applications to one message per store
// round trip.) Failures are retried with
// exponential backoff and jitter up to MaxAttempts, then dead-lettered.
// Zero fields take the defaults above; Store and Services are required.
type Outbox struct {
	Store Store
	// Services maps Delivery.Service to the service that sends it.
	Services map[string]notify.Service
	// RateLimits by service name; other services are paced as they say
	// (Paced), or at DefaultServiceRate.
	RateLimits     map[string]RateLimit
	MaxAttempts    int
	RetryBaseDelay time.Duration
	RetryMaxDelay  time.Duration
	AttemptTimeout time.Duration
	MaxInFlight    int
	// MaxUnrecorded bounds the messages sent or being sent whose delivery
	// is not recorded yet: what a crash can make the next process send
	// again.
	MaxUnrecorded int
	// MaxRetryAfter is the longest Retry-After waited out; a longer one
	// counts as a failed attempt.
	MaxRetryAfter time.Duration
	// MaxRateLimitWaits bounds Retry-After waits per delivery, which do not
	// spend attempts.
	MaxRateLimitWaits int
	// RescanInterval is how often the running outbox looks in the store for
	// pending deliveries it does not hold yet: those `crowsnest notify
	// redeliver` or another process marked pending. Negative turns the
	// rescans off (pending records are then read only at Start).
	RescanInterval time.Duration
	// OnDeadLetter is called (outside locks) for each delivery given up on,
	// so the controller can emit an Event.
	OnDeadLetter func(Record)
	// Journal, when set, remembers each message sent until its delivered
	// state is recorded, so a process restarted after a kill does not send
	// it again (see Journal).
	Journal *Journal
	Metrics *Metrics
	Logger  *slog.Logger
	// Now is the clock for record times; nil is time.Now.
	Now func() time.Time

	initOnce sync.Once
	mu       sync.Mutex
	ctx      context.Context
	running  bool
	stopping bool
	// loading holds dispatches back while Start reads the pending records,
	// so a delivery enqueued meanwhile is not sent twice.
	loading  bool
	deferred []Record
	queues   map[string]*destQueue
	// queued holds the IDs handed to a worker until their final state is
	// saved: the store may say pending until then, and a rescan must not
	// take that for a delivery nobody holds.
	queued map[string]bool
	// again holds redeliveries asked for while the previous delivery of the
	// same ID was still being settled; they are queued once it is.
	again map[string]Record
	// settled collects the IDs settled while a rescan reads the store, whose
	// list may show them pending from before.
	settled map[string]bool
	// recovered holds the IDs found pending at Start: an earlier process
	// may have sent them without recording it, so a notify.Confirmer is asked
	// before they are sent.
	recovered map[string]bool
	// enqueuing counts the Enqueues of an ID writing its record (not early
	// sends), and settledEnqueuing holds those IDs a worker settled
	// meanwhile: a worker still saving an earlier send of the ID may save
	// over the record just created, and the Enqueue must not hand the
	// delivered message to a worker again.
	enqueuing        map[string]int
	settledEnqueuing map[string]bool
	// creating holds the records being written of early sends: a worker
	// saves nothing about one before its Create returned.
	creating map[string]*pendingCreate
	limiters map[string]*rate.Limiter
	sem      chan struct{}
	// unrecorded holds a slot per send from its start until a delivered
	// message is recorded (or the attempt failed).
	unrecorded chan struct{}
	wg         sync.WaitGroup
	// settledSome wakes the compaction loop (Compactor stores).
	settledSome chan struct{}
	// rescans counts the rescans done (Rescans).
	rescans atomic.Int64
}

// pendingCreate is the Create of an early send's record; done closes
// when it returned.
type pendingCreate struct {
	done chan struct{}
}

type destQueue struct {
	items  []Record
	active bool
}

func (o *Outbox) init() {
	o.initOnce.Do(func() {
		if o.MaxAttempts <= 0 {
			o.MaxAttempts = DefaultMaxAttempts
		}
		if o.RetryBaseDelay <= 0 {
			o.RetryBaseDelay = DefaultRetryBaseDelay
		}
		if o.RetryMaxDelay <= 0 {
			o.RetryMaxDelay = DefaultRetryMaxDelay
		}
		if o.AttemptTimeout <= 0 {
			o.AttemptTimeout = DefaultAttemptTimeout
		}
		if o.MaxInFlight <= 0 {
			o.MaxInFlight = DefaultMaxInFlight
		}
		if o.MaxUnrecorded <= 0 {
			o.MaxUnrecorded = DefaultMaxUnrecorded
		}
		if o.MaxRetryAfter <= 0 {
			o.MaxRetryAfter = DefaultMaxRetryAfter
		}
		if o.MaxRateLimitWaits <= 0 {
			o.MaxRateLimitWaits = DefaultMaxRateLimitWaits
		}
		if o.RescanInterval == 0 {
			o.RescanInterval = DefaultRescanInterval
		}
		if o.Logger == nil {
			o.Logger = slog.New(slog.DiscardHandler)
		}
		if o.Now == nil {
			o.Now = time.Now
		}
		o.queues = map[string]*destQueue{}
		o.queued = map[string]bool{}
		o.again = map[string]Record{}
		o.creating = map[string]*pendingCreate{}
		o.enqueuing = map[string]int{}
		o.settledEnqueuing = map[string]bool{}
		o.limiters = map[string]*rate.Limiter{}
		o.sem = make(chan struct{}, o.MaxInFlight)
		o.unrecorded = make(chan struct{}, o.MaxUnrecorded)
		o.settledSome = make(chan struct{}, 1)
	})
}

// ErrRunning is returned by Start when the outbox already runs.
var ErrRunning = errors.New("outbox already running")

// Start delivers what the store holds as pending, then every delivery
// enqueued and, every RescanInterval, every pending one that appeared in
// the store meanwhile, until ctx is cancelled; it returns once every
// worker stopped. Deliveries interrupted by the stop stay pending for the
// next Start.
func (o *Outbox) Start(ctx context.Context) error {
	o.init()
	if o.Store == nil {
		return errors.New("outbox has no store")
	}
	o.mu.Lock()
	if o.running {
		o.mu.Unlock()
		return ErrRunning
	}
	o.running, o.stopping, o.ctx, o.loading = true, false, ctx, true
	o.mu.Unlock()
	pending, err := o.Store.List(ctx, ListOptions{State: StatePending})
	o.mu.Lock()
	o.loading = false
	if err == nil {
		// One critical section: no worker can settle a record between two
		// dispatches of it (one listed, one enqueued meanwhile).
		if o.recovered == nil {
			o.recovered = make(map[string]bool, len(pending))
		}
		for i := range pending {
			o.recovered[pending[i].ID] = true
			o.dispatchLocked(pending[i])
		}
		for i := range o.deferred {
			o.dispatchLocked(o.deferred[i])
		}
	}
	o.deferred = nil
	o.mu.Unlock()
	var compacting sync.WaitGroup
	if c, ok := o.Store.(Compactor); ok && err == nil {
		// Compact once at start: an older crowsnest kept finished records
		// in the shards.
		o.wakeCompaction()
		compacting.Go(func() { o.compactAfterSettling(ctx, c) })
	}
	if err == nil {
		o.rescanEvery(ctx)
	}
	compacting.Wait()
	o.mu.Lock()
	o.stopping = true
	o.mu.Unlock()
	o.wg.Wait()
	o.mu.Lock()
	o.running, o.ctx = false, nil
	o.queues = map[string]*destQueue{}
	o.queued = map[string]bool{}
	o.again = map[string]Record{}
	o.settled, o.recovered = nil, nil
	o.Metrics.setDepth(0)
	o.mu.Unlock()
	if err != nil {
		return fmt.Errorf("loading pending deliveries: %w", err)
	}
	return nil
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

// Depth returns how many deliveries workers hold (the outbox depth
// gauge). Enqueue, Redeliver, Start and a rescan hand a delivery to a
// worker before they return, and the worker holds it until its final
// state is saved, after its last send: once Depth is 0, every send they
// started is over. Tests wait for it to know a duplicate would have been
// sent by then.
func (o *Outbox) Depth() int {
	o.init()
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(o.queued)
}

// Rescans returns how many rescans of the store the running outbox did.
// What a rescan found pending is handed to workers before it counts, so
// once Rescans grew by two, a whole rescan read the store after the
// caller looked. Tests wait for it to know a record left pending would
// have been picked up.
func (o *Outbox) Rescans() int64 { return o.rescans.Load() }

// Log returns the delivery log of app ("namespace/name"; empty for every
// app), oldest first: what was sent where, when, the result and attempts.
func (o *Outbox) Log(ctx context.Context, app string) ([]Record, error) {
	o.init()
	recs, err := o.Store.List(ctx, ListOptions{App: app})
	if err != nil {
		return nil, fmt.Errorf("reading the delivery log: %w", err)
	}
	return recs, nil
}

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
		if o.OnDeadLetter != nil {
			o.OnDeadLetter(*rec)
		}
		return unsure, true
	}
	rec.NextAttempt = now.Add(o.backoff(rec.Attempts))
	o.save(ctx, log, *rec)
	o.Metrics.attempt(rec.Service, rec.Trigger, ResultFailed, took)
	log.Debug("notification failed, will retry", "attempts", rec.Attempts, "next", rec.NextAttempt, "err", err)
	return unsure, false
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

// SetServices replaces the services (after a config reload); their paces
// start afresh.
func (o *Outbox) SetServices(s map[string]notify.Service) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.Services = s
	o.limiters = map[string]*rate.Limiter{}
}

// Paced is a notify.Service with the pace the outbox keeps towards it.
type Paced interface {
	notify.Service
	RateLimit() RateLimit
}

// WithRateLimit returns svc paced at rl by the outbox (unless the
// outbox's RateLimits name the service).
func WithRateLimit(svc notify.Service, rl RateLimit) notify.Service { return pacedService{svc, rl} }

type pacedService struct {
	notify.Service
	rl RateLimit
}

func (p pacedService) RateLimit() RateLimit { return p.rl }

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

func (o *Outbox) wakeCompaction() {
	select {
	case o.settledSome <- struct{}{}:
	default:
	}
}

// compactAfterSettling compacts the store a moment after deliveries
// settle, until ctx ends: the records each delivery waits to write stay
// few however many were delivered.
func (o *Outbox) compactAfterSettling(ctx context.Context, c Compactor) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-o.settledSome:
		}
		if backoff.Sleep(ctx, DefaultCompactDelay) != nil {
			return
		}
		if err := c.Compact(ctx); err != nil && ctx.Err() == nil {
			o.Logger.Warn("compacting the outbox failed; trying again after the next delivery", "err", err)
		}
	}
}

// rescanEvery rescans the store every RescanInterval until ctx ends.
func (o *Outbox) rescanEvery(ctx context.Context) {
	if o.RescanInterval < 0 {
		<-ctx.Done()
		return
	}
	tick := time.NewTicker(o.RescanInterval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			o.rescan(ctx)
		}
	}
}

// rescan queues the store's pending records that no worker holds. A
// record settled while the list was read may be listed as pending from
// before its final save: it is skipped, as are queued ones, so nothing is
// sent twice.
func (o *Outbox) rescan(ctx context.Context) {
	defer o.rescans.Add(1)
	o.mu.Lock()
	o.settled = map[string]bool{}
	o.mu.Unlock()
	pending, err := o.Store.List(ctx, ListOptions{State: StatePending})
	o.mu.Lock()
	defer o.mu.Unlock()
	settled := o.settled
	o.settled = nil
	if err != nil {
		if ctx.Err() == nil {
			o.Logger.Warn("reading pending deliveries failed; trying again at the next rescan", "err", err)
		}
		return
	}
	picked := 0
	for i := range pending {
		if id := pending[i].ID; !settled[id] && !o.queued[id] {
			o.dispatchLocked(pending[i])
			picked++
		}
	}
	if picked > 0 {
		o.Logger.Info("pending deliveries picked up from the store", "count", picked)
	}
	o.Logger.Debug("outbox rescanned the store", "pending", len(pending), "picked", picked, "held", len(o.queued))
}

func (o *Outbox) limiter(service string) *rate.Limiter {
	o.mu.Lock()
	defer o.mu.Unlock()
	l := o.limiters[service]
	if l == nil {
		rl, ok := o.RateLimits[service]
		if p, paced := o.Services[service].(Paced); !ok && paced {
			rl, ok = p.RateLimit(), true
		}
		if !ok {
			rl = RateLimit{PerSecond: DefaultServiceRate, Burst: DefaultServiceBurst}
		}
		limit := rate.Limit(rl.PerSecond)
		if rl.PerSecond < 0 {
			limit = rate.Inf
		}
		l = rate.NewLimiter(limit, max(1, rl.Burst))
		o.limiters[service] = l
	}
	return l
}

// backoff is RetryBaseDelay doubled per failed attempt, capped at
// RetryMaxDelay, with jitter over its upper half.
func (o *Outbox) backoff(attempts int) time.Duration {
	return backoff.Delay(o.RetryBaseDelay, o.RetryMaxDelay, attempts)
}
