package main

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// kubeRounds runs rounds 1-3 (whichever are asked for; round 1 always,
// since the others start from its end state) on one crowsnest process in
// Kubernetes mode.
func (e *env) kubeRounds(ctx context.Context) ([]result, error) {
	const ns = "bench"
	ctx, cancel := context.WithCancel(ctx) // stops the tracker
	defer cancel()
	dir := filepath.Join(e.dir, "kube")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	if err := e.cluster.createNamespace(ctx, ns); err != nil {
		return nil, err
	}
	p := appParams{ns: ns, regHost: e.reg.host, kind: kindKube}
	if err := e.cluster.createApps(ctx, ns, e.s.N, func(i int) (map[string]any, map[string]any) { return e.s.appObject(p, i) }); err != nil {
		return nil, err
	}
	e.opts.logf("%s: %d Applications created", e.s.Name, e.s.N)
	tr, err := e.cluster.track(ctx, ns)
	if err != nil {
		return nil, err
	}
	et, err := e.cluster.trackEvents(ctx, ns)
	if err != nil {
		return nil, err
	}
	// The floor is measured while the harness's own watches (which time
	// the rounds) run, as they do in the round it is compared with.
	floor, err := e.cluster.floor(ctx, ns, e.s.N, tr)
	if err != nil {
		return nil, err
	}
	d, m, err := e.launch(dir, ns, "", nil)
	if err != nil {
		return nil, err
	}
	defer d.stop()

	var results []result
	r1, err := e.roundColdStart(ctx, d, tr, et, m, floor, "1", "cold start")
	results = append(results, r1)
	if err != nil {
		return results, err
	}
	if e.opts.rounds["2"] {
		r, err := e.roundSteady(ctx, d)
		results = append(results, r)
		if err != nil {
			return results, err
		}
	}
	if e.opts.rounds["3"] {
		r, err := e.roundNewTag(ctx, d, tr, et, floor, false)
		results = append(results, r)
		if err != nil {
			return results, err
		}
		r, err = e.roundNewTag(ctx, d, tr, et, floor, true)
		results = append(results, r)
		if err != nil {
			return results, err
		}
	}
	return results, d.exited()
}

// roundColdStart: from process start until every Application is patched
// to the newest tag, then until every ImagesUpdated Event is recorded.
// floor is the apiserver's own time for the same writes, measured in the
// same run.
func (e *env) roundColdStart(ctx context.Context, d *daemon, tr *tracker, et *eventTracker, m *meter, floor floorRun, round, title string) (result, error) {
	r := e.newResult(round, title, e.s.N)
	r.FloorSeconds, r.FloorAnsweredSeconds = secs(floor.seen), secs(floor.answered)
	r.note("floor: the harness's own client lists the %d Applications and patches each once (%d in parallel, no rate limit, with the harness's watches running as in the round); its watch saw the last patch after %.2f s (answered after %.2f s) on this machine", e.s.N, setupWorkers, secs(floor.seen), secs(floor.answered))
	newest := tag(e.newest)
	stopProfile := e.profileRound(ctx, d, round)
	wctx, cancel := context.WithTimeout(ctx, e.opts.roundTimeout)
	defer cancel()
	seen, err := tr.waitAll(wctx, newest, e.s.N)
	m.markDone()
	stopProfile()
	r.Done = tr.count(newest)
	if err != nil {
		return r, fmt.Errorf("round %s: %w%s", round, err, exitNote(d))
	}
	r.note("registry requests are counted until every Application was patched; polls after that, at the poll interval, are the steady state's")
	r.WallSeconds = secs(latest(seen).Sub(d.started))
	r.FloorRatio = ratio(r.WallSeconds, r.FloorSeconds)
	measureEvents(ctx, et, &r, 0, e.s.N, d.started)
	if err := e.endRound(ctx, m, &r, time.Second); err != nil {
		return r, err
	}
	e.saveHeap(ctx, d, round)
	e.checkRegistry(&r, 1)
	e.checkKubeRound1(&r)
	checkEvents(&r)
	return r, nil
}

// roundSteady: one more poll interval with nothing new.
func (e *env) roundSteady(ctx context.Context, d *daemon) (result, error) {
	r := e.newResult("2", "steady state", e.s.K)
	m, err := startMeter(ctx, d, e.reg)
	if err != nil {
		return r, err
	}
	start := time.Now()
	deadline := start.Add(2*e.pollInterval() + 30*time.Second)
	for len(e.reg.listsPerRepo()) < e.s.K && time.Now().Before(deadline) {
		if err := d.exited(); err != nil {
			return r, err
		}
		time.Sleep(100 * time.Millisecond)
	}
	r.Done = len(e.reg.listsPerRepo())
	if err := settle(ctx, d, e.reg, time.Second, 10*time.Second); err != nil {
		return r, err
	}
	r.WallSeconds = secs(time.Since(start))
	if rep := e.reg.repeated(start, 5); len(rep) > 0 {
		r.note("listed more than once (times from the round's start): %s", strings.Join(rep, "; "))
	}
	if err := m.finish(ctx, e, &r); err != nil {
		return r, err
	}
	r.note("Done counts repositories polled again; the round lasts until each was (one poll interval, %s)", e.pollInterval())
	e.checkRegistry(&r, 2)
	writes := r.Kube["patch applications"] + r.Kube["get applications"] + r.Kube["update applications"]
	r.check("nothing written when nothing is new", "0 Application gets/patches", fmt.Sprint(writes), writes == 0)
	return r, nil
}

// roundNewTag pushes one newer tag to every repository and waits until
// every Application carries it, found by polling or told by a webhook.
func (e *env) roundNewTag(ctx context.Context, d *daemon, tr *tracker, et *eventTracker, floor floorRun, webhook bool) (result, error) {
	t := e.s.T
	title := "new tag, poll"
	if webhook {
		t, title = e.s.T+1, "new tag, webhook"
	}
	r := e.newResult("3", title, e.s.N)
	r.FloorSeconds, r.FloorAnsweredSeconds = secs(floor.seen), secs(floor.answered)
	eventBase := et.count()
	if err := e.pushAll(ctx, t); err != nil {
		return r, err
	}
	m, err := startMeter(ctx, d, e.reg)
	if err != nil {
		return r, err
	}
	start := time.Now()
	triggerAt := map[string]time.Time{} // repository -> webhook sent
	if webhook {
		triggerAt, err = e.sendWebhooks(ctx, d, tag(t))
		if err != nil {
			return r, err
		}
	}
	wctx, cancel := context.WithTimeout(ctx, e.pollInterval()+e.opts.roundTimeout)
	defer cancel()
	seen, err := tr.waitAll(wctx, tag(t), e.s.N)
	// The round waits for its Events and settles, which may outlast a
	// poll interval: count registry requests until now, as round 1.
	m.markDone()
	r.Done = tr.count(tag(t))
	if err != nil {
		return r, fmt.Errorf("round 3 (%s): %w%s", title, err, exitNote(d))
	}
	r.note("registry requests are counted until every Application was patched; polls after that, at the poll interval, are the steady state's")
	if !webhook {
		for repo, at := range e.reg.firstList() {
			triggerAt[repo] = at
		}
	}
	last := latest(seen)
	r.WallSeconds = secs(last.Sub(start))
	first := last
	for _, at := range triggerAt {
		if at.Before(first) {
			first = at
		}
	}
	r.AfterTriggerSeconds = secs(last.Sub(first))
	lat := make([]time.Duration, 0, len(seen))
	for app, at := range seen {
		var i int
		if _, err := fmt.Sscanf(app, "app-%05d", &i); err != nil {
			continue
		}
		if trig, ok := triggerAt[e.s.repo(e.s.repoOf(i))]; ok {
			lat = append(lat, at.Sub(trig))
		}
	}
	r.setLatencies(lat)
	r.FloorRatio = ratio(r.AfterTriggerSeconds, r.FloorSeconds)
	measureEvents(ctx, et, &r, eventBase, e.s.N, start)
	if err := e.endRound(ctx, m, &r, time.Second); err != nil {
		return r, err
	}
	e.checkRegistry(&r, 3)
	// Patching every Application takes the floor's time on this machine
	// whatever triggers it; what crowsnest adds is the ratio.
	if limit := floorLimit(e.s.Name); limit > 0 {
		r.check(fmt.Sprintf("%s round 3: every Application patched within %.2fx the floor after the %s", e.s.Name, limit,
			map[bool]string{false: "poll tick", true: "webhook"}[webhook]),
			fmt.Sprintf("<= %.2fx (%.2f s)", limit, limit*r.FloorSeconds),
			fmt.Sprintf("%.2fx (%.2f s)", r.FloorRatio, r.AfterTriggerSeconds), r.FloorRatio <= limit)
	}
	checkEvents(&r)
	if webhook {
		r.note("latency is from sending the webhook (loopback) to the harness's watch seeing the patched Application")
	} else {
		r.note("the poll tick is crowsnest's first tag list of the repository after the push; wall is from the push")
	}
	return r, nil
}

// sendWebhooks posts distribution push envelopes for tag (webhookBatch
// repositories each) and returns when each repository's was sent.
func (e *env) sendWebhooks(ctx context.Context, d *daemon, tagName string) (map[string]time.Time, error) {
	sent := map[string]time.Time{}
	url := "http://" + d.webhookAddr + "/webhooks/registry/distribution"
	for i := 0; i < e.s.K; i += webhookBatch {
		var repos []string
		for k := i; k < min(i+webhookBatch, e.s.K); k++ {
			repos = append(repos, e.s.repo(k))
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(distributionEnvelope(e.reg.host, tagName, repos)))
		if err != nil {
			return nil, err
		}
		req.Header.Set("Content-Type", "application/vnd.docker.distribution.events.v1+json")
		req.Header.Set("Authorization", "Bearer "+webhookSecret)
		at := time.Now()
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return nil, fmt.Errorf("registry webhook: %w", err)
		}
		_ = resp.Body.Close()
		if resp.StatusCode >= 300 {
			return nil, fmt.Errorf("registry webhook: %s", resp.Status)
		}
		for _, repo := range repos {
			sent[repo] = at
		}
	}
	return sent, nil
}

// checkRegistry records the registry requirements of round n.
func (e *env) checkRegistry(r *result, n int) {
	g := r.Registry
	metadata := g[kindHead] + g[kindManifest] + g[kindBlob]
	switch n {
	case 1:
		got := fmt.Sprintf("%d lists, at most %d per repository", g[kindList], r.MaxListsPerRepo)
		if r.WallSeconds > e.pollInterval().Seconds() {
			got += fmt.Sprintf(" (the pass outlasted the %s poll interval and tag cache)", e.pollInterval())
		}
		r.check("one tag listing per repository", fmt.Sprintf("%d lists, at most 1 per repository", e.s.K),
			got, g[kindList] == e.s.K && r.MaxListsPerRepo == 1)
		r.check("metadata only where the strategy needs it (semver: none)", "0 manifest/blob", fmt.Sprint(metadata), metadata == 0)
	case 2:
		r.check("at most one tag listing per repository", "<= 1 per repository",
			fmt.Sprintf("%d lists, at most %d per repository", g[kindList], r.MaxListsPerRepo), r.MaxListsPerRepo <= 1)
		r.check("zero manifest/blob requests", "0", fmt.Sprint(metadata), metadata == 0)
	case 3:
		r.check("each new manifest fetched at most once (semver: none needed)", fmt.Sprintf("<= %d", e.s.K),
			fmt.Sprint(g[kindManifest]+g[kindHead]), g[kindManifest]+g[kindHead] <= e.s.K)
	}
	r.check("registry pings at most once per registry, never per Application", "<= 1", fmt.Sprint(g[kindPing]), g[kindPing] <= 1)
}

func (e *env) checkKubeRound1(r *result) {
	patches := r.Kube["patch applications"]
	r.check("every Application patched once", fmt.Sprint(e.s.N), fmt.Sprint(patches), patches == e.s.N)
	if limit := floorLimit(e.s.Name); limit > 0 && r.Round == "1" {
		r.check(fmt.Sprintf("%s round 1 (process start to every Application patched) within %.2fx the floor of the same run", e.s.Name, limit),
			fmt.Sprintf("<= %.2fx (%.2f s)", limit, limit*r.FloorSeconds),
			fmt.Sprintf("%.2fx (%.2f s)", r.FloorRatio, r.WallSeconds), r.FloorRatio <= limit)
	}
	if limit := rssLimitMB(e.s.Name); limit > 0 {
		r.check(fmt.Sprintf("%s round %s peak RSS", e.s.Name, r.Round), fmt.Sprintf("<= %.0f MB", limit),
			fmt.Sprintf("%.1f MB (sampled peaks: %.1f anonymous, %.1f file-backed)", r.PeakRSSMB, r.PeakAnonMB, r.PeakFileMB), r.PeakRSSMB <= limit)
	}
}

// floorLimit is the bound on a cold pass as a ratio to the floor
// measured in the same run (0: none for the scenario). Ratios, not
// seconds: the floor is what this machine's apiserver needs for the same
// writes, which no client can beat.
func floorLimit(scenario string) float64 {
	switch scenario {
	case "S2":
		return 1.15
	case "S3":
		return 1.25
	}
	return 0
}

// rssLimitMB is the bound on peak RSS (0: none).
func rssLimitMB(scenario string) float64 {
	switch scenario {
	case "S2":
		return 60
	case "S3":
		return 300
	}
	return 0
}

// ratio is a/b, or 0 when b is.
func ratio(a, b float64) float64 {
	if b <= 0 {
		return 0
	}
	return a / b
}

func latest[K comparable](ts map[K]time.Time) time.Time {
	var last time.Time
	for _, t := range ts {
		if t.After(last) {
			last = t
		}
	}
	return last
}

func exitNote(d *daemon) string {
	if err := d.exited(); err != nil {
		return "; " + err.Error()
	}
	lines := strings.Split(strings.TrimSpace(tail(d.logPath, 4000)), "\n")
	return "; crowsnest log ends:\n" + strings.Join(lines[max(0, len(lines)-3):], "\n")
}
