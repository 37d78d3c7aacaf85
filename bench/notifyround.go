package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Template event names of the catalog's on-sync-running and
// on-sync-succeeded webhook bodies.
const (
	msgRunning   = "app-sync-running"
	msgSucceeded = "app-sync-succeeded"
)

// notifyRound (round 5): every Application subscribed to the catalog's
// on-sync-running and on-sync-succeeded triggers on a webhook service; the
// harness drives each through a sync (Running, then Succeeded) and the
// sink records when each message arrives.
func (e *env) notifyRound(ctx context.Context) (result, error) {
	const ns = "bench-notify"
	r := e.newResult("5", "notifications", 2*e.s.N)
	dir := filepath.Join(e.dir, "notify")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return r, err
	}
	sk, err := startSink()
	if err != nil {
		return r, err
	}
	defer sk.close()
	if err := e.cluster.createNamespace(ctx, ns); err != nil {
		return r, err
	}
	p := appParams{ns: ns, regHost: e.reg.host, kind: kindNotify}
	if err := e.cluster.createApps(ctx, ns, e.s.N, func(i int) (map[string]any, map[string]any) { return e.s.appObject(p, i) }); err != nil {
		return r, err
	}
	d, _, err := e.launch(dir, ns, fmt.Sprintf(`notifications:
  catalog: true
  services:
    hook:
      webhook: {url: %s/notify}
`, sk.url), nil)
	if err != nil {
		return r, err
	}
	defer d.stop()
	if err := d.waitReady(ctx); err != nil {
		return r, err
	}
	// The Applications seen at start are a baseline; wait until it is
	// recorded, so the sync is all the round measures.
	if err := settle(ctx, d, e.reg, 2*time.Second, 2*time.Minute); err != nil {
		return r, err
	}
	m, err := startMeter(ctx, d, e.reg)
	if err != nil {
		return r, err
	}

	before, err := d.metrics(ctx)
	if err != nil {
		return r, err
	}
	stopProfile := e.profileRound(ctx, d, "5")
	defer stopProfile()
	start := time.Now()
	updated := map[[2]string]time.Time{}
	var mu sync.Mutex
	apps := e.cluster.apps(ns)
	wave := func(phase, msg string) error {
		g, gctx := errgroup.WithContext(ctx)
		g.SetLimit(setupWorkers)
		for i := range e.s.N {
			g.Go(func() error {
				rev := revision(e.s.app(i), 1)
				patch, _ := json.Marshal(map[string]any{"status": map[string]any{
					"sync": map[string]any{"status": "Synced", "revision": rev},
					"operationState": map[string]any{
						"phase": phase, "operation": map[string]any{"sync": map[string]any{"revision": rev}},
						"syncResult": map[string]any{"revision": rev},
					},
				}})
				if _, err := apps.Patch(gctx, e.s.app(i), types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
					return fmt.Errorf("driving %s to %s: %w", e.s.app(i), phase, err)
				}
				at := time.Now()
				mu.Lock()
				updated[[2]string{msg, e.s.app(i)}] = at
				mu.Unlock()
				return nil
			})
		}
		return g.Wait()
	}
	if err := wave("Running", msgRunning); err != nil {
		return r, err
	}
	if err := wave("Succeeded", msgSucceeded); err != nil {
		return r, err
	}

	// The outbox paces each service (5 messages/s by default), so the
	// wait scales with the messages.
	timeout := e.opts.roundTimeout + time.Duration(2*e.s.N/5)*time.Second*3/2
	deadline := time.Now().Add(timeout)
	var first map[[2]string]time.Time
	for {
		var next <-chan struct{}
		first, r.Notifications, r.Duplicates, next = sk.snapshot()
		r.Done = len(first)
		if r.Done >= r.Want {
			break
		}
		if err := d.exited(); err != nil {
			return r, err
		}
		if time.Now().After(deadline) {
			return r, fmt.Errorf("round 5: %d of %d messages after %s%s", r.Done, r.Want, timeout, exitNote(d))
		}
		select {
		case <-next:
		case <-time.After(time.Second):
		case <-ctx.Done():
			return r, ctx.Err()
		}
	}
	r.WallSeconds = secs(latest(first).Sub(start))
	stopProfile()
	// Room for a duplicate to show up.
	time.Sleep(3 * time.Second)
	_, r.Notifications, r.Duplicates, _ = sk.snapshot()
	lat := make([]time.Duration, 0, len(first))
	for key, at := range first {
		if u, ok := updated[key]; ok {
			lat = append(lat, at.Sub(u))
		}
	}
	r.setLatencies(lat)
	after, err := d.metrics(ctx)
	if err != nil {
		return r, err
	}
	const latencyMetric = "crowsnest_notify_latency_seconds"
	var counted float64
	r.AddedP50Ms, counted = histQuantile(before, after, latencyMetric, 0.50)
	r.AddedP99Ms, _ = histQuantile(before, after, latencyMetric, 0.99)
	if err := e.endRound(ctx, m, &r, time.Second); err != nil {
		return r, err
	}
	for key, ts := range sk.duplicates(5) {
		var at []string
		for _, t := range ts {
			at = append(at, fmt.Sprintf("+%.1fs", t.Sub(start).Seconds()))
		}
		r.note("duplicate: %s for %s arrived %d times (%s after the first status update)", key[0], key[1], len(ts), strings.Join(at, ", "))
	}
	r.note("latency (p50 / p99 column) is from the harness's status update returning to the sink receiving the message; wall is from the first update to the last message")
	r.note("crowsnest's part, from its %s histogram (observing the update to the sink's answer; %.0f messages counted): p50 at most %.0f ms, p99 at most %.0f ms (bucket bounds); the rest of the latency is the apiserver writing the update and delivering it to watchers", latencyMetric, counted, r.AddedP50Ms, r.AddedP99Ms)
	r.check("every message delivered once", fmt.Sprintf("%d messages, 0 duplicates", r.Want),
		fmt.Sprintf("%d messages, %d duplicates", r.Notifications, r.Duplicates), r.Done == r.Want && r.Duplicates == 0)
	r.check("crowsnest adds under 100 ms p99 between Application update and message (its latency histogram)", "<= 100 ms",
		fmt.Sprintf("<= %.0f ms over %.0f messages (status update returned to message received: %.0f ms)", r.AddedP99Ms, counted, r.LatencyP99Ms),
		int(counted) == r.Want && r.AddedP99Ms <= 100)
	return r, nil
}
