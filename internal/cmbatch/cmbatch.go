package cmbatch

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/crowsnest-dev/crowsnest/internal/kubecore"
)

// DefaultBackoff spaces a Writer's retries after conflicts. A conflict
// means another process wrote the ConfigMap (one Writer's changes never
// conflict with each other): retrying for about 5s, jittered, outlasts a
// burst of them.
var DefaultBackoff = wait.Backoff{Steps: 12, Duration: 10 * time.Millisecond, Factor: 1.6, Jitter: 0.5, Cap: time.Second}

// Defaults for Writer's zero fields. Ten seconds bounds a request to a
// slow apiserver. 500 changes keep one write's work bounded while a burst
// still needs few writes.
const (
	DefaultTimeout  = 10 * time.Second
	DefaultMaxBatch = 500
)

// Change edits the data of one write. It reports whether it changed
// anything. On an error it leaves the data as it found it: the error is
// its caller's alone and the other changes of the batch go ahead. A change
// may run again on fresh data (after another process wrote the
// ConfigMap, and before its error is reported when it failed on the
// Writer's kept copy), so it computes from the data it is given and resets
// what it reports each time it runs.
type Change func(b *Batch) (changed bool, err error)

// Batch is the data of one write, shared by the changes it carries.
type Batch struct {
	// Data is the ConfigMap's data with the earlier changes applied.
	Data    map[string]string
	finally []func(data map[string]string)
	keys    map[string]bool
}

// Finally runs fn once after every change of the batch, however many
// changes ask for it under key: work every change needs but one pass
// serves, such as trimming a log.
func (b *Batch) Finally(key string, fn func(data map[string]string)) {
	if b.keys[key] {
		return
	}
	if b.keys == nil {
		b.keys = map[string]bool{}
	}
	b.keys[key] = true
	b.finally = append(b.finally, fn)
}

// Writer changes one ConfigMap for many goroutines at once. Changes that
// arrive while a write is in flight go out together in the next one
// (group commit): a burst of N changes costs a few requests instead of a
// read and a write each, and they never conflict with each other. The
// object last written is kept, so a write reads only after another
// process wrote (a conflict), when the batch is applied again to what it
// wrote. Writes are guarded by resourceVersion, so nobody's change is lost.
type Writer struct {
	Client    kubecore.ConfigMapsGetter
	Namespace string
	Name      string
	// Labels are set on the ConfigMap when the Writer creates it.
	Labels map[string]string
	// Backoff spaces the retries after a conflict; DefaultBackoff when
	// Steps is zero.
	Backoff  wait.Backoff
	Timeout  time.Duration
	MaxBatch int

	mu    sync.Mutex
	queue []*op
	busy  bool
	// last is the ConfigMap as last read or written; nil means read first.
	last *corev1.ConfigMap
}

type op struct {
	ctx    context.Context
	change Change
	err    error
	done   chan struct{}
	// released says done is closed; only the draining goroutine reads
	// or writes it.
	released bool
}

// release hands the op's outcome (err) to its Apply, once.
func (o *op) release() {
	if !o.released {
		o.released = true
		close(o.done)
	}
}

// Apply makes change in the next write and returns once it is written (or
// has failed). A change whose ctx ends before its write starts, or while
// the write waits to retry after a conflict, is dropped with ctx's error
// and Apply returns at once; a request under way finishes within its
// timeout.
func (w *Writer) Apply(ctx context.Context, change Change) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	o := &op{ctx: ctx, change: change, done: make(chan struct{})}
	w.mu.Lock()
	w.queue = append(w.queue, o)
	lead := !w.busy
	w.busy = true
	w.mu.Unlock()
	if lead {
		go w.drain()
	}
	<-o.done
	return o.err
}

// Forget drops the kept copy, so the next write reads the ConfigMap
// first. Nothing needs it for correctness; it saves a conflict when the
// caller knows another process wrote.
func (w *Writer) Forget() {
	w.mu.Lock()
	w.last = nil
	w.mu.Unlock()
}

// Peek calls fn with the data of the ConfigMap as this Writer last read
// or wrote it, and reports whether it keeps such a copy (none before its
// first write, nor after a failed one). Another process may have written
// since. fn must not change or keep the map.
func (w *Writer) Peek(fn func(data map[string]string)) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.last == nil {
		return false
	}
	fn(w.last.Data)
	return true
}

// drain writes the queued changes, a batch at a time, until none is left.
func (w *Writer) drain() {
	for {
		w.mu.Lock()
		if len(w.queue) == 0 {
			w.busy = false
			w.queue = nil
			w.mu.Unlock()
			return
		}
		n := min(len(w.queue), w.maxBatch())
		batch := w.queue[:n:n]
		w.queue = w.queue[n:]
		w.mu.Unlock()
		w.write(batch)
		for _, o := range batch {
			o.release()
		}
	}
}

func (w *Writer) maxBatch() int {
	if w.MaxBatch <= 0 {
		return DefaultMaxBatch
	}
	return w.MaxBatch
}

// write applies ops in one write, again from a fresh read after each
// conflict, and leaves each op's outcome in its err.
func (w *Writer) write(ops []*op) {
	backoff := w.Backoff
	if backoff.Steps == 0 {
		backoff = DefaultBackoff
	}
	for {
		live := dropEnded(ops)
		if len(live) == 0 {
			return
		}
		err := w.try(live)
		if err == nil {
			return
		}
		if errors.Is(err, errStale) {
			continue // read and apply again, at once
		}
		if !errConflict(err) || backoff.Steps <= 1 {
			for _, o := range live {
				if o.err == nil {
					o.err = err
				}
			}
			return
		}
		ops = pause(backoff.Step(), live)
	}
}

// dropEnded releases the ops whose context ended, with its error, and
// returns the others.
func dropEnded(ops []*op) []*op {
	live := ops[:0:0]
	for _, o := range ops {
		switch {
		case o.released:
		case o.ctx.Err() != nil:
			o.err = o.ctx.Err()
			o.release()
		default:
			live = append(live, o)
		}
	}
	return live
}

// pause waits d before a retry. An op whose context ends meanwhile is
// released at once (dropEnded); pause returns the ops left, early when
// none is.
func pause(d time.Duration, ops []*op) []*op {
	ended := make(chan struct{}, 1)
	stops := make([]func() bool, 0, len(ops))
	for _, o := range ops {
		stops = append(stops, context.AfterFunc(o.ctx, func() {
			select {
			case ended <- struct{}{}:
			default:
			}
		}))
	}
	defer func() {
		for _, stop := range stops {
			stop()
		}
	}()
	t := time.NewTimer(d)
	defer t.Stop()
	for {
		if ops = dropEnded(ops); len(ops) == 0 {
			return nil
		}
		select {
		case <-t.C:
			return ops
		case <-ended:
		}
	}
}

// errStale asks write to apply a batch again to a fresh read.
var errStale = errors.New("kept copy may be stale")

// errConflict reports a write that lost a race with another writer: a
// changed resourceVersion, a ConfigMap created or deleted meanwhile.
func errConflict(err error) bool {
	return apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err) || apierrors.IsNotFound(err)
}

// try applies ops to the kept (or a freshly read) ConfigMap and writes it
// once. It sets each op's own error; the error returned is the write's.
func (w *Writer) try(ops []*op) error {
	timeout := w.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	cms := w.Client.ConfigMaps(w.Namespace)
	w.mu.Lock()
	cur := w.last
	w.mu.Unlock()
	kept := cur != nil
	if cur == nil {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		got, err := cms.Get(ctx, w.Name, metav1.GetOptions{})
		cancel()
		switch {
		case apierrors.IsNotFound(err):
			got = &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: w.Name, Namespace: w.Namespace, Labels: maps.Clone(w.Labels)}}
		case err != nil:
			return fmt.Errorf("reading ConfigMap %s/%s: %w", w.Namespace, w.Name, err)
		}
		cur = got
	}
	b := &Batch{Data: maps.Clone(cur.Data)}
	if b.Data == nil {
		b.Data = map[string]string{}
	}
	changed, failed := false, false
	for _, o := range ops {
		c, err := o.change(b)
		o.err = err
		changed = changed || (c && err == nil)
		failed = failed || err != nil
	}
	if failed && kept {
		// A change refused what may be an old copy (another process may
		// have written since): decide on the ConfigMap as it is.
		w.keep(nil)
		return errStale
	}
	if !changed {
		w.keep(cur)
		return nil
	}
	for _, fn := range b.finally {
		fn(b.Data)
	}
	next := &corev1.ConfigMap{ObjectMeta: *cur.ObjectMeta.DeepCopy(), Data: b.Data, BinaryData: cur.BinaryData}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var (
		written *corev1.ConfigMap
		err     error
	)
	if next.ResourceVersion == "" {
		written, err = cms.Create(ctx, next, metav1.CreateOptions{})
	} else {
		written, err = cms.Update(ctx, next, metav1.UpdateOptions{})
	}
	if err != nil {
		w.keep(nil)
		if errConflict(err) {
			return err
		}
		return fmt.Errorf("writing ConfigMap %s/%s: %w", w.Namespace, w.Name, err)
	}
	w.keep(written)
	return nil
}

func (w *Writer) keep(cm *corev1.ConfigMap) {
	w.mu.Lock()
	w.last = cm
	w.mu.Unlock()
}
