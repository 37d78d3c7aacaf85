package main

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/crowsnest-dev/crowsnest/internal/giteaenv"
)

// prRound (round 8): every Application in pull-request write-back on a
// real Gitea (internal/giteaenv), N Applications over K repositories, one
// per image, each holding its Applications' kustomizations; one AppProject
// and one credential (an Argo CD repo-creds Secret for all K), so one
// pull request per repository. First from process start until every
// repository has one open pull request whose head carries each of its
// Applications' newest tag; then a newer tag for every image, announced by
// registry webhooks, until the same pull requests carry it. Pull requests
// are read from Gitea's API; crowsnest's forge API calls from its
// crowsnest_forge_requests_total, held against what the forge received.
func (e *env) prRound(ctx context.Context) ([]result, error) {
	const ns = "bench-pr"
	dir := filepath.Join(e.dir, "pr")
	if err := os.MkdirAll(filepath.Join(dir, "gitea"), 0o755); err != nil {
		return nil, err
	}
	start := time.Now()
	g, err := giteaenv.Start(ctx, filepath.Join(dir, "gitea"))
	if err != nil {
		return nil, fmt.Errorf("starting Gitea %s (hack/gitea/build.sh): %w", giteaenv.Version(), err)
	}
	defer g.Stop()
	proxy, err := startForgeProxy(g.URL)
	if err != nil {
		return nil, err
	}
	defer proxy.close()
	c, err := g.Client(ctx)
	if err != nil {
		return nil, err
	}
	w := &giteaWorld{s: e.s, regHost: e.reg.host, g: g, c: c, proxy: proxy}
	if err := w.seed(ctx); err != nil {
		return nil, fmt.Errorf("%w\n%s", err, g.Logs())
	}
	e.opts.logf("%s: Gitea %s with %d repositories in %s", e.s.Name, giteaenv.Version(), e.s.K, time.Since(start).Round(time.Millisecond))
	if err := e.cluster.createNamespace(ctx, ns); err != nil {
		return nil, err
	}
	if err := e.cluster.createArgoSecret(ctx, ns, "repo-creds", w.reposURL()+"/", giteaenv.Admin, g.Token); err != nil {
		return nil, err
	}
	p := appParams{ns: ns, regHost: e.reg.host, repoURL: w.reposURL(), kind: kindPR}
	if err := e.cluster.createApps(ctx, ns, e.s.N, func(i int) (map[string]any, map[string]any) { return e.s.appObject(p, i) }); err != nil {
		return nil, err
	}
	before, err := w.counters(ctx, nil)
	if err != nil {
		return nil, err
	}
	d, m, err := e.launch(dir, ns, fmt.Sprintf("git:\n  forges:\n    %q:\n      kind: gitea\n", proxy.host), nil)
	if err != nil {
		return nil, err
	}
	defer d.stop()

	var results []result
	r, heads, err := e.prOpen(ctx, w, d, m, before)
	results = append(results, r)
	if err != nil {
		return results, err
	}
	r, err = e.prUpdate(ctx, w, d, heads)
	results = append(results, r)
	if err != nil {
		return results, err
	}
	return results, d.exited()
}

// prOpen is round 8's first part: from process start until every
// repository's pull request carries each of its Applications' newest tag.
func (e *env) prOpen(ctx context.Context, w *giteaWorld, d *daemon, m *meter, before prCounters) (result, map[int]*repoHead, error) {
	r := e.newResult("8", "pull requests, open", e.s.N)
	want := tag(e.newest) // round 3 may have pushed newer tags
	stopProfile := e.profileRound(ctx, d, "8")
	defer stopProfile()
	heads, err := w.waitHeads(ctx, d, want, nil, e.opts.roundTimeout)
	m.markDone()
	stopProfile()
	r.Done = carrying(heads)
	if err != nil {
		return r, heads, fmt.Errorf("round 8 (open): %w%s", err, exitNote(d))
	}
	r.WallSeconds = secs(lastDone(heads).Sub(d.started))
	if err := e.endRound(ctx, m, &r, 2*time.Second); err != nil {
		return r, heads, err
	}
	if err := w.finish(ctx, d, &r, before, heads); err != nil {
		return r, heads, err
	}
	r.note("wall is from process start until the harness saw the last repository's pull request carry every Application's %s (each repository's open pull requests listed through Gitea's API until then, then a pause of %s); first repository after %.2f s, median %.2f s",
		want, headPollInterval, secs(nthDone(heads, 0).Sub(d.started)), secs(nthDone(heads, len(heads)/2).Sub(d.started)))
	from := len(r.Checks)
	pr := r.PullRequests
	r.check("every Application's newest tag on its repository's pull request", fmt.Sprint(e.s.N), fmt.Sprint(r.Done), r.Done == e.s.N)
	r.check("at most one open pull request per repository (one AppProject, one credential: exactly one)",
		fmt.Sprintf("%d open, %d opened", e.s.K, e.s.K), fmt.Sprintf("%d open, %d opened", pr.Open, pr.Opened), pr.Open == e.s.K && pr.Opened == e.s.K)
	proposed := pr.Proposed["opened"] + pr.Proposed["updated"]
	r.check("crowsnest_pull_requests_total: each Application proposed once", fmt.Sprintf("opened+updated = %d", e.s.N),
		fmt.Sprintf("opened %d + updated %d", pr.Proposed["opened"], pr.Proposed["updated"]), proposed == e.s.N)
	checkForgeCounts(&r)
	err = failedChecks(&r, from)
	return r, heads, err
}

// prUpdate is round 8's second part: a newer tag for every image,
// announced by webhook, until the pull requests of the first part carry
// it; none is opened.
func (e *env) prUpdate(ctx context.Context, w *giteaWorld, d *daemon, opened map[int]*repoHead) (result, error) {
	r := e.newResult("8", "pull requests, newer tag", e.s.N)
	t := e.newest + 1
	if err := e.pushAll(ctx, t); err != nil {
		return r, err
	}
	m, err := startMeter(ctx, d, e.reg)
	if err != nil {
		return r, err
	}
	before, err := w.counters(ctx, d)
	if err != nil {
		return r, err
	}
	start := time.Now()
	if _, err := e.sendWebhooks(ctx, d, tag(t)); err != nil {
		return r, err
	}
	heads, err := w.waitHeads(ctx, d, tag(t), opened, e.opts.roundTimeout)
	m.markDone()
	r.Done = carrying(heads)
	if err != nil {
		return r, fmt.Errorf("round 8 (newer tag): %w%s", err, exitNote(d))
	}
	r.WallSeconds = secs(lastDone(heads).Sub(start))
	if err := e.endRound(ctx, m, &r, 2*time.Second); err != nil {
		return r, err
	}
	if err := w.finish(ctx, d, &r, before, heads); err != nil {
		return r, err
	}
	r.note("wall is from the webhooks (after the push of %s to every image) until the harness saw the last pull request carry it; first repository after %.2f s, median %.2f s",
		tag(t), secs(nthDone(heads, 0).Sub(start)), secs(nthDone(heads, len(heads)/2).Sub(start)))
	from := len(r.Checks)
	pr := r.PullRequests
	r.check("every Application's newer tag on the same pull request", fmt.Sprint(e.s.N), fmt.Sprint(r.Done), r.Done == e.s.N)
	r.check("the open pull requests updated, none opened", fmt.Sprintf("%d open (the same numbers), 0 opened", e.s.K),
		fmt.Sprintf("%d open, %d opened", pr.Open, pr.Opened), pr.Open == e.s.K && pr.Opened == 0)
	r.check("crowsnest_pull_requests_total: each Application's pull request updated once", fmt.Sprintf("updated %d, opened 0", e.s.N),
		fmt.Sprintf("updated %d, opened %d", pr.Proposed["updated"], pr.Proposed["opened"]), pr.Proposed["updated"] == e.s.N && pr.Proposed["opened"] == 0)
	checkForgeCounts(&r)
	err = failedChecks(&r, from)
	return r, err
}

// checkForgeCounts holds crowsnest's count of its forge API calls against
// the forge's, and wants none refused.
func checkForgeCounts(r *result) {
	pr := r.PullRequests
	received := 0
	for _, k := range forgeAPIKinds {
		received += pr.Received[k]
	}
	r.check("crowsnest_forge_requests_total counts every forge API call Gitea received", fmt.Sprint(received),
		fmt.Sprint(pr.ForgeCallsTotal), pr.ForgeCallsTotal == received)
	r.check("no forge API call failed", "0 answered with no 2xx", fmt.Sprint(pr.ForgeFailed), pr.ForgeFailed == 0)
}

// failedChecks is an error naming the checks of r from index from on
// that missed: round 8's requirements fail the run.
func failedChecks(r *result, from int) error {
	var missed []string
	for _, c := range r.Checks[from:] {
		if !c.Pass {
			missed = append(missed, fmt.Sprintf("%s: want %s, got %s", c.Requirement, c.Want, c.Got))
		}
	}
	if len(missed) == 0 {
		return nil
	}
	return fmt.Errorf("round 8 (%s): %s", r.Title, strings.Join(missed, "; "))
}

// headPollInterval is the pause between the harness's looks at the
// pull requests still waited for: one list request per repository each
// time, on the same two cores as Gitea's hooks and crowsnest.
const headPollInterval = time.Second

// repoHead is a repository's open pull request as the harness last saw
// it.
type repoHead struct {
	number   int64
	ref, sha string
	// carrying is how many of the repository's Applications the head
	// carries the tag waited for; done when the harness saw all.
	carrying int
	done     time.Time
}

// waitHeads polls Gitea until every repository has one open pull
// request into prBase whose head carries tagName for each of its
// Applications, and returns each repository's. With same, each must be
// the pull request same names for the repository. A second open pull
// request in a repository, or another one than same's, fails at once.
func (w *giteaWorld) waitHeads(ctx context.Context, d *daemon, tagName string, same map[int]*repoHead, timeout time.Duration) (map[int]*repoHead, error) {
	heads := map[int]*repoHead{}
	deadline := time.Now().Add(timeout)
	for {
		pending := 0
		for k := range w.s.K {
			if heads[k].isDone() {
				continue
			}
			if err := w.lookAtHead(k, tagName, same, heads); err != nil {
				return heads, err
			}
			if !heads[k].isDone() {
				pending++
			}
		}
		if pending == 0 {
			return heads, nil
		}
		if err := d.exited(); err != nil {
			return heads, err
		}
		if time.Now().After(deadline) {
			return heads, fmt.Errorf("%d of %d repositories' pull requests carry %s for every Application (%d of %d Applications) after %s",
				w.s.K-pending, w.s.K, tagName, carrying(heads), w.s.N, timeout)
		}
		select {
		case <-ctx.Done():
			return heads, ctx.Err()
		case <-time.After(headPollInterval):
		}
	}
}

// lookAtHead reads repository k's open pull request into heads[k], and
// what its head carries when it moved.
func (w *giteaWorld) lookAtHead(k int, tagName string, same, heads map[int]*repoHead) error {
	prs, err := w.openPulls(k)
	if err != nil {
		return err
	}
	switch {
	case len(prs) == 0:
		return nil
	case len(prs) > 1:
		var desc []string
		for _, p := range prs {
			desc = append(desc, fmt.Sprintf("#%d from %s", p.Index, p.Head.Ref))
		}
		return fmt.Errorf("repository %s has %d open pull requests (%s), want one", w.s.gitRepo(k), len(prs), strings.Join(desc, ", "))
	}
	p := prs[0]
	if p.Base == nil || p.Head == nil || p.Base.Ref != prBase {
		return fmt.Errorf("repository %s: pull request #%d is not into %s", w.s.gitRepo(k), p.Index, prBase)
	}
	if s := same[k]; s != nil && s.number != p.Index {
		return fmt.Errorf("repository %s: pull request #%d from %s is open, want #%d from %s brought up to date", w.s.gitRepo(k), p.Index, p.Head.Ref, s.number, s.ref)
	}
	h := heads[k]
	if h == nil || h.number != p.Index {
		h = &repoHead{number: p.Index, ref: p.Head.Ref}
		heads[k] = h
	}
	if h.sha == p.Head.Sha {
		return nil
	}
	h.sha = p.Head.Sha
	if h.carrying, err = w.carrying(k, h.sha, tagName); err != nil {
		return err
	}
	if h.carrying == len(w.s.appsIn(k)) {
		h.done = time.Now()
	}
	return nil
}

func (h *repoHead) isDone() bool { return h != nil && !h.done.IsZero() }

// carrying sums the Applications the heads carry.
func carrying(heads map[int]*repoHead) int {
	n := 0
	for _, h := range heads {
		n += h.carrying
	}
	return n
}

func lastDone(heads map[int]*repoHead) time.Time { return nthDone(heads, len(heads)-1) }

// nthDone is the n-th (from 0) time a repository was done.
func nthDone(heads map[int]*repoHead, n int) time.Time {
	ts := make([]time.Time, 0, len(heads))
	for _, h := range heads {
		ts = append(ts, h.done)
	}
	slices.SortFunc(ts, time.Time.Compare)
	if len(ts) == 0 {
		return time.Time{}
	}
	return ts[min(max(n, 0), len(ts)-1)]
}

// prCounters are what round 8 counts at a part's start and end.
type prCounters struct {
	forge    map[string]float64 // crowsnest_forge_requests_total by method
	failed   float64            // the same answered with no 2xx
	proposed map[string]float64 // crowsnest_pull_requests_total by action
	// crowsnest_git_operation_duration_seconds's count and sum by op
	gitCount, gitSum map[string]float64
	received         map[string]int // the proxy's counts by kind
	pulls            int            // pull requests Gitea has had
}

// counters takes the counts now; with d nil (before crowsnest starts)
// crowsnest's are zero.
func (w *giteaWorld) counters(ctx context.Context, d *daemon) (prCounters, error) {
	c := prCounters{forge: map[string]float64{}, proposed: map[string]float64{}, received: w.proxy.counts()}
	var err error
	if c.pulls, err = w.pullCounts(); err != nil {
		return c, err
	}
	if d == nil {
		return c, nil
	}
	samples, err := d.metrics(ctx)
	if err != nil {
		return c, err
	}
	c.forge = samples.sum("crowsnest_forge_requests_total", "method")
	for code, n := range samples.sum("crowsnest_forge_requests_total", "code") {
		if !strings.HasPrefix(code, "2") {
			c.failed += n
		}
	}
	c.proposed = samples.sum("crowsnest_pull_requests_total", "action")
	c.gitCount = samples.sum("crowsnest_git_operation_duration_seconds_count", "op")
	c.gitSum = samples.sum("crowsnest_git_operation_duration_seconds_sum", "op")
	return c, nil
}

// finish fills r.PullRequests with the differences since before, once
// the part settled.
func (w *giteaWorld) finish(ctx context.Context, d *daemon, r *result, before prCounters, heads map[int]*repoHead) error {
	after, err := w.counters(ctx, d)
	if err != nil {
		return err
	}
	pr := &prStats{Opened: after.pulls - before.pulls, Proposed: map[string]int{}, ForgeCalls: map[string]int{}, Received: map[string]int{},
		ForgeFailed: int(after.failed - before.failed)}
	for k := range w.s.K {
		prs, err := w.openPulls(k)
		if err != nil {
			return err
		}
		if len(prs) == 1 && heads[k] != nil && prs[0].Index != heads[k].number {
			return errors.New("round 8: repository " + w.s.gitRepo(k) + "'s open pull request changed while the round settled")
		}
		pr.Open += len(prs)
	}
	for action, n := range after.proposed {
		if v := int(n - before.proposed[action]); v != 0 {
			pr.Proposed[action] = v
		}
	}
	for method, n := range after.forge {
		if v := int(n - before.forge[method]); v != 0 {
			pr.ForgeCalls[method] = v
			pr.ForgeCallsTotal += v
		}
	}
	for kind, n := range after.received {
		if v := n - before.received[kind]; v != 0 {
			pr.Received[kind] = v
		}
	}
	pr.ForgeCallsPerPR = ratio(float64(pr.ForgeCallsTotal), float64(pr.Open))
	pr.WriteCallsPerPR = ratio(float64(pr.ForgeCallsTotal-pr.Received[forgeGetPull]), float64(pr.Open))
	r.PullRequests, r.Pushes = pr, pr.Received[forgeGitPush]
	var ops []string
	for _, op := range slices.Sorted(maps.Keys(after.gitCount)) {
		if n := after.gitCount[op] - before.gitCount[op]; n > 0 {
			ops = append(ops, fmt.Sprintf("%s %.0f × %.2f s", op, n, (after.gitSum[op]-before.gitSum[op])/n))
		}
	}
	r.note("%s: crowsnest's Git operations (crowsnest_git_operation_duration_seconds, mean): %s; a push lasts until Gitea's hooks have run (its pull request brought up to date)",
		r.Title, strings.Join(ops, ", "))
	return nil
}
