package kubeevents

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"github.com/crowsnest-dev/crowsnest/internal/backoff"
	"github.com/crowsnest-dev/crowsnest/internal/kubecore"
)

// Defaults of a Sink's zero fields.
const (
	// DefaultWorkers writers share the client's rate limiter: enough to
	// use its budget when each write takes a few milliseconds, few enough
	// not to crowd the apiserver's other clients.
	DefaultWorkers = 8
	// DefaultMaxPending Events wait at most (about 1 KiB each): a cold
	// start of 10,000 Applications waits for its writes, and those are
	// paced by the same budget as the Events.
	DefaultMaxPending = 10000
	// writtenMemory Events already written are remembered, so that a
	// repeat updates the count of the Event instead of creating another
	// (client-go's correlator keeps 4096).
	writtenMemory = 4096
	// writeAttempts per Event when the apiserver fails transiently
	// (timeouts, 429, 5xx, a broken connection).
	writeAttempts   = 4
	firstRetryDelay = 100 * time.Millisecond
	// DefaultMaxDelay is the longest an Event waits for busy write-backs
	// (Sink.WriteBacks): long enough for a pass over a thousand Applications to
	// have the apiserver to itself, short enough that an Event is never
	// far behind the write it reports.
	DefaultMaxDelay = 10 * time.Second
	// busyPoll is how often a waiting writer asks WriteBacks again.
	busyPoll = 50 * time.Millisecond
	// shedLogEvery is the longest a count of shed records waits before
	// its log line; the first one of a quiet period is logged at once.
	shedLogEvery = 10 * time.Second
)

// combinedPrefix starts the message of an Event that stands for several
// records of the same object, type and reason with different messages,
// as Kubernetes' aggregator writes it.
const combinedPrefix = "(combined from similar events): "

// WriteBacks says whether write-backs are under way: the engine is not
// idle (controller.Engine). The Sink asks without its lock held.
type WriteBacks interface {
	Working() bool
}

// Sink records Events through Client. The zero value of every field but
// Client is usable; Start it before use and Shut it down at the end.
type Sink struct {
	Client     kubecore.EventsGetter
	Source     corev1.EventSource
	Workers    int
	MaxPending int
	Metrics    *Metrics
	Log        *slog.Logger
	// WriteBacks, when set, says whether write-backs are under way.
	// While they are, Events wait, each at most MaxDelay (zero:
	// DefaultMaxDelay) after it was recorded: an Event costs the
	// apiserver about what a write costs, and the write is what the user
	// waits for. Shutdown does not wait.
	WriteBacks WriteBacks
	MaxDelay   time.Duration

	mu       sync.Mutex
	cond     *sync.Cond
	pending  map[eventKey]*entry
	similar  map[similarKey]*entry
	queue    []*entry
	written  map[eventKey]writtenEvent
	order    []eventKey // written's keys, oldest first
	closing  bool
	closed   chan struct{} // closed when closing is set
	stopped  bool
	ctx      context.Context
	cancel   context.CancelFunc
	wg       sync.WaitGroup
	tickStop chan struct{}
	shed     shedTally
	lastLog  time.Time
}

type eventKey struct {
	similarKey
	message string
}

type similarKey struct {
	apiVersion, kind, namespace, name string
	uid                               types.UID
	eventType, reason                 string
}

// entry is one Event waiting to be written: records counts the calls to
// Event folded into it; more those that arrived while it was written.
type entry struct {
	key         eventKey
	ref         corev1.ObjectReference
	message     string
	combined    bool
	records     int
	first, last time.Time
	inflight    bool
	more        int
	moreLast    time.Time
}

type writtenEvent struct {
	namespace, name string
	count           int32
}

type shedTally struct {
	combined, dropped, refused, unflushed int
	lastErr                               string
}

func (t shedTally) zero() bool {
	return t.combined == 0 && t.dropped == 0 && t.refused == 0 && t.unflushed == 0
}

// Start starts the writers; they run until Shutdown.
func (s *Sink) Start() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cond != nil {
		return
	}
	if s.Log == nil {
		s.Log = slog.New(slog.DiscardHandler)
	}
	s.cond = sync.NewCond(&s.mu)
	s.pending = map[eventKey]*entry{}
	s.similar = map[similarKey]*entry{}
	s.written = map[eventKey]writtenEvent{}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	s.tickStop = make(chan struct{})
	s.closed = make(chan struct{})
	workers := s.Workers
	if workers <= 0 {
		workers = DefaultWorkers
	}
	s.wg.Add(workers)
	for range workers {
		go s.work()
	}
	go s.tick()
}

// Event records an Event on object (an *corev1.ObjectReference, or any
// object kubecore.GetReference can reference: its kind set, as on an
// unstructured object, or a built-in kind kubecore knows). It never blocks
// on the apiserver.
func (s *Sink) Event(object runtime.Object, eventType, reason, message string) {
	ref, err := kubecore.GetReference(object)
	if err != nil {
		s.Log.Error("event not recorded: no reference to its object", "reason", reason, "error", err)
		s.Metrics.add(OutcomeRefused, 1)
		return
	}
	now := time.Now()
	sk := similarKey{ref.APIVersion, ref.Kind, ref.Namespace, ref.Name, ref.UID, eventType, reason}
	k := eventKey{sk, message}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cond == nil || s.stopped {
		s.Metrics.add(OutcomeUnflushed, 1)
		s.shed.unflushed++
		s.logShedLocked(now, false)
		return
	}
	if e := s.pending[k]; e != nil {
		if e.inflight {
			e.more++
			e.moreLast = now
		} else {
			e.records++
			e.last = now
		}
		return
	}
	limit := s.MaxPending
	if limit <= 0 {
		limit = DefaultMaxPending
	}
	if len(s.pending) >= limit {
		if e := s.similar[sk]; e != nil && !e.inflight {
			e.records++
			e.last = now
			e.combined = true
			e.message = combinedPrefix + message
			s.shed.combined++
			s.logShedLocked(now, false)
			return
		}
		s.Metrics.add(OutcomeDropped, 1)
		s.shed.dropped++
		s.logShedLocked(now, false)
		return
	}
	e := &entry{key: k, ref: *ref, message: message, records: 1, first: now, last: now}
	s.pending[k] = e
	s.similar[sk] = e
	s.queue = append(s.queue, e)
	s.Metrics.setPending(len(s.pending))
	s.cond.Signal()
}

// Shutdown writes what is pending, for at most timeout, then stops the
// writers. What it could not write is counted as unflushed and logged;
// so is anything recorded afterwards.
func (s *Sink) Shutdown(timeout time.Duration) {
	s.mu.Lock()
	if s.cond == nil || s.closing {
		s.mu.Unlock()
		return
	}
	s.closing = true
	close(s.closed)
	s.cond.Broadcast()
	s.mu.Unlock()
	done := make(chan struct{})
	go func() { s.wg.Wait(); close(done) }()
	timer := time.NewTimer(timeout)
	select {
	case <-done:
		timer.Stop()
	case <-timer.C:
		s.cancel() // writes under way fail now, and count as unflushed
		s.mu.Lock()
		s.stopped = true
		s.cond.Broadcast()
		s.mu.Unlock()
		<-done
	}
	s.cancel()
	close(s.tickStop)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stopped = true
	for _, e := range s.pending {
		n := e.more
		if !e.inflight {
			n += e.records
		}
		s.Metrics.add(OutcomeUnflushed, n)
		s.shed.unflushed += n
	}
	s.pending, s.similar, s.queue = map[eventKey]*entry{}, map[similarKey]*entry{}, nil
	s.Metrics.setPending(0)
	s.logShedLocked(time.Now(), true)
}

func (s *Sink) work() {
	defer s.wg.Done()
	s.mu.Lock()
	defer s.mu.Unlock()
	for {
		for len(s.queue) == 0 && !s.closing && !s.stopped {
			s.cond.Wait()
		}
		if len(s.queue) == 0 || s.stopped {
			return
		}
		if s.yieldLocked() {
			continue // the queue may have changed while waiting
		}
		e := s.queue[0]
		s.queue[0] = nil
		s.queue = s.queue[1:]
		e.inflight = true
		if s.similar[e.key.similarKey] == e {
			delete(s.similar, e.key.similarKey)
		}
		n, last, msg, combined := e.records, e.last, e.message, e.combined
		prev, seen := s.written[e.key]
		if combined {
			seen = false
		}
		s.mu.Unlock()
		w, err := s.write(e, n, last, msg, prev, seen)
		s.mu.Lock()
		s.finishLocked(e, n, w, err)
	}
}

// yieldLocked waits a moment while the write-backs are busy, unless the
// oldest waiting Event has waited MaxDelay or the Sink is closing; it
// reports whether the caller must look at the queue again (it waited,
// or the queue emptied or the Sink stopped while it asked). It releases
// the lock while it waits and while it asks WriteBacks.
func (s *Sink) yieldLocked() bool {
	if s.WriteBacks == nil || s.closing {
		return false
	}
	maxDelay := s.MaxDelay
	if maxDelay <= 0 {
		maxDelay = DefaultMaxDelay
	}
	left := time.Until(s.queue[0].first.Add(maxDelay))
	if left <= 0 {
		return false
	}
	s.mu.Unlock()
	busy := s.WriteBacks.Working()
	if busy {
		t := time.NewTimer(min(left, busyPoll))
		select {
		case <-t.C:
		case <-s.closed:
		}
		t.Stop()
	}
	s.mu.Lock()
	// Other writers ran meanwhile: they may have taken the queue.
	return busy || len(s.queue) == 0 || s.stopped
}

// finishLocked accounts for the write of e's n records and queues the
// records that arrived meanwhile.
func (s *Sink) finishLocked(e *entry, n int, w writtenEvent, err error) {
	switch {
	case err == nil:
		s.Metrics.add(OutcomeWritten, 1)
		s.Metrics.add(OutcomeAggregated, n-1)
		if !e.combined {
			s.rememberLocked(e.key, w)
		}
	case s.ctx.Err() != nil:
		s.Metrics.add(OutcomeUnflushed, n)
		s.shed.unflushed += n
		s.shed.lastErr = err.Error()
		s.logShedLocked(time.Now(), false)
	default:
		s.Metrics.add(OutcomeRefused, n)
		s.shed.refused += n
		s.shed.lastErr = err.Error()
		s.logShedLocked(time.Now(), false)
	}
	if e.more > 0 && !s.stopped {
		e.records, e.first, e.last, e.more = e.more, e.moreLast, e.moreLast, 0
		e.combined, e.message, e.inflight = false, e.key.message, false
		s.queue = append(s.queue, e)
		s.similar[e.key.similarKey] = e
		s.cond.Signal()
		return
	}
	if e.more > 0 { // stopped: Shutdown counts e.more
		return
	}
	delete(s.pending, e.key)
	s.Metrics.setPending(len(s.pending))
}

func (s *Sink) rememberLocked(k eventKey, w writtenEvent) {
	if _, ok := s.written[k]; !ok {
		if len(s.order) >= writtenMemory {
			delete(s.written, s.order[0])
			s.order[0] = eventKey{}
			s.order = s.order[1:]
		}
		s.order = append(s.order, k)
	}
	s.written[k] = w
}

// write creates the Event for n records, or adds them to the count of the
// Event prev when seen.
func (s *Sink) write(e *entry, n int, last time.Time, msg string, prev writtenEvent, seen bool) (writtenEvent, error) {
	if seen {
		count := prev.count + int32(n)
		patch, err := json.Marshal(map[string]any{
			"count":         count,
			"lastTimestamp": metav1.NewTime(last),
		})
		if err != nil {
			return prev, err
		}
		err = s.retry(func(ctx context.Context) error {
			_, err := s.Client.Events(prev.namespace).Patch(ctx, prev.name, types.StrategicMergePatchType, patch, metav1.PatchOptions{})
			return err
		})
		if err == nil {
			prev.count = count
			return prev, nil
		}
		if !apierrors.IsNotFound(err) { // gone (expired): write a new one
			return prev, err
		}
	}
	ns := e.ref.Namespace
	if ns == "" {
		ns = metav1.NamespaceDefault
	}
	first := e.first
	if seen {
		first = last
	}
	ev := &corev1.Event{
		ObjectMeta:          metav1.ObjectMeta{Namespace: ns},
		InvolvedObject:      e.ref,
		Reason:              e.key.reason,
		Message:             msg,
		Type:                e.key.eventType,
		Source:              s.Source,
		FirstTimestamp:      metav1.NewTime(first),
		LastTimestamp:       metav1.NewTime(last),
		Count:               int32(n),
		ReportingController: s.Source.Component,
		ReportingInstance:   s.Source.Host,
	}
	err := s.retry(func(ctx context.Context) error {
		// The name client-go gives an Event: the object's name and the
		// time, unique per attempt.
		ev.Name = fmt.Sprintf("%v.%x", e.ref.Name, time.Now().UnixNano())
		_, err := s.Client.Events(ns).Create(ctx, ev, metav1.CreateOptions{})
		return err
	})
	return writtenEvent{namespace: ns, name: ev.Name, count: int32(n)}, err
}

// retry calls write until it succeeds, fails for good, or the attempts
// or the Sink's context run out.
func (s *Sink) retry(write func(context.Context) error) error {
	delay := firstRetryDelay
	var err error
	for attempt := 1; ; attempt++ {
		if err = write(s.ctx); err == nil || !transient(err) || attempt == writeAttempts || s.ctx.Err() != nil {
			return err
		}
		if backoff.Sleep(s.ctx, delay) != nil {
			return err
		}
		delay *= 2
	}
}

// transient reports whether a failed write may succeed if repeated: the
// apiserver was busy or unreachable, not refusing this Event.
func transient(err error) bool {
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		return !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded)
	}
	return apierrors.IsServerTimeout(err) || apierrors.IsTimeout(err) || apierrors.IsTooManyRequests(err) ||
		apierrors.IsInternalError(err) || apierrors.IsServiceUnavailable(err) || apierrors.IsUnexpectedServerError(err) ||
		apierrors.IsAlreadyExists(err)
}

func (s *Sink) tick() {
	t := time.NewTicker(shedLogEvery)
	defer t.Stop()
	for {
		select {
		case <-s.tickStop:
			return
		case now := <-t.C:
			s.mu.Lock()
			s.logShedLocked(now, true)
			s.mu.Unlock()
		}
	}
}

// logShedLocked logs the records shed since the last line: at once when
// no line was logged for a second (or force), else at the next tick.
func (s *Sink) logShedLocked(now time.Time, force bool) {
	if s.shed.zero() || (!force && now.Sub(s.lastLog) < time.Second) {
		return
	}
	t := s.shed
	s.shed, s.lastLog = shedTally{}, now
	args := []any{"combined", t.combined, "dropped", t.dropped, "refused", t.refused, "unflushed", t.unflushed}
	if t.lastErr != "" {
		args = append(args, "error", t.lastErr)
	}
	s.Log.Warn("events shed", args...)
}
