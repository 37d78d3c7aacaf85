package main

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/informers"
)

// reasonImagesUpdated is the reason of the Event crowsnest records for
// each Application it updates (controller.EventImagesUpdated).
const reasonImagesUpdated = "ImagesUpdated"

// eventTracker watches the ImagesUpdated Events of a namespace and keeps
// their total: the sum of their counts, since a sink may fold several
// records into one Event's count, as Kubernetes does.
type eventTracker struct {
	mu     sync.Mutex
	counts map[string]int // Event name -> count
	total  int
	// reached[i] is when the total first reached i+1.
	reached []time.Time
	cond    chan struct{} // closed and replaced on every change
}

func (c *cluster) trackEvents(ctx context.Context, ns string) (*eventTracker, error) {
	t := &eventTracker{counts: map[string]int{}, cond: make(chan struct{})}
	f := informers.NewSharedInformerFactoryWithOptions(c.core, 0, informers.WithNamespace(ns),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) {
			o.FieldSelector = fields.OneTermEqualSelector("reason", reasonImagesUpdated).String()
		}))
	inf := f.Core().V1().Events().Informer()
	record := func(obj any) {
		if ev, ok := obj.(*corev1.Event); ok {
			t.observe(ev.Name, int(max(ev.Count, 1)), time.Now())
		}
	}
	if err := watchInformer(ctx, inf, f.Start, record); err != nil {
		return nil, fmt.Errorf("watching Events in %s: %w", ns, err)
	}
	return t, nil
}

func (t *eventTracker) observe(name string, count int, at time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if count <= t.counts[name] {
		return
	}
	t.total += count - t.counts[name]
	t.counts[name] = count
	for len(t.reached) < t.total {
		t.reached = append(t.reached, at)
	}
	close(t.cond)
	t.cond = make(chan struct{})
}

// count is the total so far.
func (t *eventTracker) count() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.total
}

// waitTotal waits until the total reaches n, or ctx ends, and returns
// the total and when it reached n (zero if it did not).
func (t *eventTracker) waitTotal(ctx context.Context, n int) (int, time.Time) {
	for {
		t.mu.Lock()
		total, ch := t.total, t.cond
		var at time.Time
		if n > 0 && total >= n {
			at = t.reached[n-1]
		}
		t.mu.Unlock()
		if n <= 0 || total >= n || ctx.Err() != nil {
			return total, at
		}
		select {
		case <-ctx.Done():
		case <-ch:
		}
	}
}

// measureEvents waits for the want Events of a round whose tracker total
// was base at its start, for at most 4x the round's wall time (and at
// least 30 s), and fills in r: Events expected, recorded, and the time
// from start until the last one.
func measureEvents(ctx context.Context, et *eventTracker, r *result, base, want int, start time.Time) {
	wait := max(30*time.Second, time.Duration(4*r.WallSeconds*float64(time.Second)))
	wctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	total, at := et.waitTotal(wctx, base+want)
	r.EventsExpected, r.EventsRecorded = want, total-base
	if !at.IsZero() {
		r.LastEventSeconds = secs(at.Sub(start))
	} else {
		r.note("%d of %d ImagesUpdated Events recorded %s after the last write", total-base, want, wait)
	}
}

// checkEvents records the Event requirements of a round that updated
// every Application once.
func checkEvents(r *result) {
	r.check("every ImagesUpdated Event recorded (counts summed)", fmt.Sprint(r.EventsExpected),
		fmt.Sprint(r.EventsRecorded), r.EventsRecorded == r.EventsExpected)
	if r.WallSeconds <= 0 {
		return
	}
	if r.LastEventSeconds == 0 {
		r.check("last Event within 2x the time of the last write", fmt.Sprintf("<= %.2f s", 2*r.WallSeconds), "not all recorded", false)
		return
	}
	r.check("last Event within 2x the time of the last write", fmt.Sprintf("<= %.2f s (2x)", 2*r.WallSeconds),
		fmt.Sprintf("%.2f s (%.2fx)", r.LastEventSeconds, r.LastEventSeconds/r.WallSeconds), r.LastEventSeconds <= 2*r.WallSeconds)
}
