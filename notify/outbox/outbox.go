package outbox

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"

	"github.com/crowsnest-dev/crowsnest/notify"
)

// DeadLetters hears of each delivery an Outbox gave up on.
type DeadLetters interface {
	DeadLettered(r Record)
}

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
	// DeadLetters, when set, hears (outside locks) of each delivery given
	// up on (crowsnest run logs it).
	DeadLetters DeadLetters
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
