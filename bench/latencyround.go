package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// registryLatency is round 7's delay per registry request: a registry
// across a real network (a cloud registry from a cluster is 20-100 ms
// away), where the loopback one answers in microseconds.
const registryLatency = 50 * time.Millisecond

// latencyRound (round 7) is a cold start on its own Applications and its
// own crowsnest process with registryLatency added to every registry
// request: the realistic case, where tag lists no longer come for free.
func (e *env) latencyRound(ctx context.Context) (result, error) {
	const ns = "bench-latency"
	ctx, cancel := context.WithCancel(ctx) // stops the trackers
	defer cancel()
	dir := filepath.Join(e.dir, "latency")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return result{}, err
	}
	if err := e.cluster.createNamespace(ctx, ns); err != nil {
		return result{}, err
	}
	p := appParams{ns: ns, regHost: e.reg.host, kind: kindKube}
	if err := e.cluster.createApps(ctx, ns, e.s.N, func(i int) (map[string]any, map[string]any) { return e.s.appObject(p, i) }); err != nil {
		return result{}, err
	}
	tr, err := e.cluster.track(ctx, ns)
	if err != nil {
		return result{}, err
	}
	et, err := e.cluster.trackEvents(ctx, ns)
	if err != nil {
		return result{}, err
	}
	// The floor is measured while the harness's own watches (which time
	// the rounds) run, as they do in the round it is compared with.
	floor, err := e.cluster.floor(ctx, ns, e.s.N, tr)
	if err != nil {
		return result{}, err
	}
	e.reg.latency.Store(int64(registryLatency))
	defer e.reg.latency.Store(0)
	d, m, err := e.launch(dir, ns, "", nil)
	if err != nil {
		return result{}, err
	}
	defer d.stop()
	r, err := e.roundColdStart(ctx, d, tr, et, m, floor, "7", fmt.Sprintf("cold start, registry +%s", registryLatency))
	if err != nil {
		return r, err
	}
	r.note("every registry request waited %s; the floor (apiserver only) does not include it", registryLatency)
	return r, d.exited()
}
