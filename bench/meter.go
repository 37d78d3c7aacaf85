package main

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/crowsnest-dev/crowsnest/internal/backoff"
)

// meter takes the counters at a round's start and turns the difference
// at its end into a result's numbers.
type meter struct {
	d        *daemon
	reg      *registry
	git      *gitServer // nil outside Git mode
	cpu      float64
	kube     map[string]int
	registry map[string]int
	pushes   int64
	rssRound bool
	// doneRegistry and doneLists, when set by markDone, are the registry
	// counts at the moment the round's work was done: the registry
	// numbers end there, and later polls (at the poll interval, while the
	// round settles) belong to the steady state.
	doneRegistry map[string]int
	doneLists    map[string]int
}

// markDone takes the registry counts now, as the round's.
func (m *meter) markDone() {
	m.doneRegistry, m.doneLists = m.reg.counts(), m.reg.listsPerRepo()
}

// startMeter starts a meter of a round on a running process (no Git
// server: launch's meter counts pushes from process start).
func startMeter(ctx context.Context, d *daemon, reg *registry) (*meter, error) {
	m := &meter{d: d, reg: reg}
	st, err := d.stats()
	if err != nil {
		return nil, err
	}
	m.cpu = st.CPUSeconds
	samples, err := d.metrics(ctx)
	if err != nil {
		return nil, err
	}
	m.kube = kubeRequests(samples)
	m.registry = reg.snapshot()
	m.rssRound = d.resetPeakRSS()
	return m, nil
}

// finish fills r with the differences since start.
func (m *meter) finish(ctx context.Context, e *env, r *result) error {
	e.saveMetrics(ctx, m.d, r)
	lists := m.reg.listsPerRepo()
	now := m.reg.snapshot()
	if m.doneRegistry != nil {
		lists, now = m.doneLists, m.doneRegistry
	}
	for _, n := range lists {
		r.MaxListsPerRepo = max(r.MaxListsPerRepo, n)
	}
	r.Registry = map[string]int{}
	for _, k := range registryKinds {
		if n := now[k] - m.registry[k]; n != 0 {
			r.Registry[k] = n
			r.RegistryTotal += n
		}
	}
	st, err := m.d.stats()
	if err != nil {
		return err
	}
	r.CPUSeconds = st.CPUSeconds - m.cpu
	r.PeakRSSMB = float64(st.PeakRSSKiB) / 1024
	r.PeakAnonMB, r.PeakFileMB = float64(st.PeakAnonKiB)/1024, float64(st.PeakFileKiB)/1024
	r.PeakRSSScope = "process"
	if m.rssRound {
		r.PeakRSSScope = "round"
	}
	samples, err := m.d.metrics(ctx)
	if err != nil {
		return err
	}
	r.Kube = map[string]int{}
	for k, v := range kubeRequests(samples) {
		if n := v - m.kube[k]; n != 0 {
			r.Kube[k] = n
			r.KubeTotal += n
		}
	}
	if m.git != nil {
		r.Pushes = int(m.git.pushes.Load() - m.pushes)
	}
	return nil
}

// kubeRequests sums crowsnest_kube_requests_total by "verb resource".
func kubeRequests(p promSamples) map[string]int {
	out := map[string]int{}
	for key, v := range p {
		name, labels, _ := strings.Cut(key, "{")
		if name != "crowsnest_kube_requests_total" {
			continue
		}
		out[labelValue(labels, "verb")+" "+labelValue(labels, "resource")] += int(v)
	}
	return out
}

// settle waits until crowsnest is idle: its work queue is empty and its
// kube-apiserver, registry and forge request counts did not move for quiet (at
// most limit), so a round's trailing work (Events, the re-reconcile
// after each patch) is counted in that round.
func settle(ctx context.Context, d *daemon, reg *registry, quiet, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	var last string
	stableSince := time.Now()
	for {
		samples, err := d.metrics(ctx)
		if err != nil {
			return err
		}
		kube := kubeRequests(samples)
		// The notification outbox reads its ConfigMaps every few seconds
		// whatever happens; that is not a round's trailing work.
		delete(kube, "get configmaps")
		counts := reg.counts()
		depth := samples.sum("crowsnest_workqueue_depth", "")[""] + samples.sum("crowsnest_notify_pending_transitions", "")[""] +
			samples.sum("crowsnest_notify_outbox_depth", "")[""]
		forge := samples.sum("crowsnest_forge_requests_total", "")[""]
		state := fmt.Sprint(depth, forge, sortedPairs(kube), sortedPairs(counts))
		if state != last || depth > 0 {
			last, stableSince = state, time.Now()
		}
		if time.Since(stableSince) >= quiet || time.Now().After(deadline) {
			return nil
		}
		if err := backoff.Sleep(ctx, 200*time.Millisecond); err != nil {
			return err
		}
	}
}

func sortedPairs(m map[string]int) string {
	keys := slices.Sorted(maps.Keys(m))
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "%s=%d ", k, m[k])
	}
	return b.String()
}

// histQuantile returns, in milliseconds, the upper bound of the bucket of
// histogram metric that holds quantile q of the observations made between
// the before and after scrapes (summed over labels), and how many there
// were. An empty histogram is 0, 0.
func histQuantile(before, after promSamples, metric string, q float64) (ms, count float64) {
	b, a := before.sum(metric+"_bucket", "le"), after.sum(metric+"_bucket", "le")
	type bucket struct{ le, n float64 }
	var buckets []bucket
	for le, n := range a {
		v, err := strconv.ParseFloat(le, 64) // "+Inf" parses as +Inf
		if err != nil {
			continue
		}
		buckets = append(buckets, bucket{v, n - b[le]})
	}
	slices.SortFunc(buckets, func(x, y bucket) int { return cmp.Compare(x.le, y.le) })
	if len(buckets) == 0 || buckets[len(buckets)-1].n == 0 {
		return 0, 0
	}
	total := buckets[len(buckets)-1].n
	for _, bk := range buckets {
		if bk.n >= q*total {
			return bk.le * 1000, total
		}
	}
	return math.Inf(1), total
}
