package registry

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"time"
)

// Target is one repository read through one client: what the poller
// polls and reports on. Images that name their own credentials (a pull
// secret) are read through their own client, with its own caches, so the
// poller polls each client's view of a repository on its own: a
// credential that fails fails only the Applications that use it, and a
// change a client sees queues the Applications that read through it.
type Target struct {
	// Repo is a repository reference ("nginx" or "docker.io/library/nginx").
	Repo string
	// Client reads the repository; nil (or the poller's Client) is the
	// poller's Client. Sharing the client the selection uses keeps one
	// cache of tags and digests.
	Client *Client
}

// Interest says how a Target is polled.
type Interest struct {
	// Interval between polls; zero uses the poller's default.
	Interval time.Duration
	// TrackDigests lists mutable tags whose digest matters (the digest
	// strategy); a new digest is a change even when the tag set is not.
	TrackDigests []string
}

// RepoChange is a repository whose tags or tracked digests changed, as
// one client sees them.
type RepoChange struct {
	Repo string
	// Client is the Target's client that saw the change; nil is the
	// poller's Client.
	Client  *Client
	Added   []string
	Removed []string
	// Tags is the new tag set, sorted.
	Tags []string
	// Digests maps each tracked tag whose digest changed to its new digest.
	Digests map[string]string
	// Refreshed is true when a webhook or manual refresh started the poll.
	Refreshed bool
}

// ChangeListener hears of the changes a Poller finds
// (controller.ImageReconciler.RepoChanged). It should hand them to a
// queue, not block.
type ChangeListener interface {
	RepoChanged(ctx context.Context, ch RepoChange)
}

// Holder holds back the polls after a repository's first while
// InFirstPass is true (controller.Engine): a pass longer than the poll
// interval would list every repository again before it used the first
// list. The first poll then takes the list the pass read, however old (up
// to HoldMaxAge). A webhook's refresh is never held.
type Holder interface {
	InFirstPass() bool
}

// Poller defaults: two minutes is argocd-image-updater's cycle; four
// polls at once keeps a poll of many repositories moving while each
// registry's own limits pace the requests. A poll gets a minute (a tag
// list of thousands of tags takes seconds): a host that accepts
// connections and never answers then holds a poll for at most half a
// cycle, not the client's two minutes of retries.
const (
	DefaultPollInterval    = 2 * time.Minute
	DefaultPollConcurrency = 4
	DefaultPollTimeout     = time.Minute
	// HoldMaxAge is the oldest tag list a first poll takes while Hold
	// holds; holdRecheck is how often held polls ask Hold again.
	HoldMaxAge  = 10 * time.Minute
	holdRecheck = time.Second
)

// Poller polls the repositories in use, each on its interval and once per
// client that reads it (Target), and reports a RepoChange only when a tag
// set or tracked digest changed. The first poll of a target only records
// what is there.
//
// Polls are scheduled one by one, not in rounds: a poll that ends frees
// its place for the next due one at once. A registry host has at most
// PerHost polls in flight, fewer than Concurrency, and a poll that runs
// past SlowAfter gives its place back, so a host that never answers
// cannot hold up another host's polls.
type Poller struct {
	Client *Client
	// Interval is the default poll interval.
	Interval time.Duration
	// Concurrency bounds polls running at once (not counting slow ones,
	// see SlowAfter).
	Concurrency int
	// PerHost bounds the polls of one registry host in flight, slow ones
	// included; zero is half of Concurrency (at least one), which leaves
	// the other half to other hosts.
	PerHost int
	// PollTimeout bounds one poll, its tag list and digests; zero is
	// DefaultPollTimeout. It is never longer than the poll's interval.
	PollTimeout time.Duration
	// SlowAfter is how long a poll counts against Concurrency: one still
	// running then lets another poll start (its host's PerHost share stays
	// taken), up to slowPerSlot slow polls per Concurrency. Zero is
	// DefaultSlowAfter.
	SlowAfter time.Duration
	// Listener, when set, hears of every change (the image reconciler).
	Listener ChangeListener
	// Hold, when set, holds back the polls after a repository's first
	// while it says so (the engine's first pass).
	Hold    Holder
	Metrics *Metrics
	Log     *slog.Logger
	// Now is the clock for schedules; nil is time.Now.
	Now func() time.Time

	initOnce sync.Once
	mu       sync.Mutex
	repos    map[pollKey]*polledRepo // every target's state
	refs     map[string]parsedRef    // SetInterests' references, parsed
	// hosts are the registry hosts of the targets, as
	// go-containerregistry names them, when retain last looked.
	hosts map[string]bool
	// wake tells Start to look at the targets again (SetInterests,
	// Refresh); freed that a poll ended or turned slow.
	wake  chan struct{}
	freed chan struct{}
	slots slots // polls in flight (under mu)
}

// pollKey names a target: a repository key and its client, nil for the
// poller's Client.
type pollKey struct {
	repo   string
	client *Client
}

type polledRepo struct {
	key       string
	repo      Repository
	client    *Client // nil: the poller's Client
	interest  Interest
	next      time.Time
	polled    bool
	refreshed bool
	polling   bool
	// slot says a poll in flight counts against Concurrency (it is not
	// slow yet).
	slot bool
	// baseline says newly tracked digests have none yet: that poll is
	// never held, or a change meanwhile would become the baseline.
	baseline bool
	tags     []string
	digests  map[string]string
}

func (p *Poller) init() {
	p.initOnce.Do(func() {
		if p.Interval <= 0 {
			p.Interval = DefaultPollInterval
		}
		if p.Concurrency <= 0 {
			p.Concurrency = DefaultPollConcurrency
		}
		if p.PerHost <= 0 {
			p.PerHost = max(1, p.Concurrency/2)
		}
		if p.PollTimeout <= 0 {
			p.PollTimeout = DefaultPollTimeout
		}
		if p.SlowAfter <= 0 {
			p.SlowAfter = DefaultSlowAfter
		}
		if p.Log == nil {
			p.Log = slog.New(slog.DiscardHandler)
		}
		if p.Now == nil {
			p.Now = time.Now
		}
		p.repos = map[pollKey]*polledRepo{}
		p.wake = make(chan struct{}, 1)
		p.freed = make(chan struct{}, 1)
		p.slots.perHost = map[string]int{}
	})
}

// SetInterests replaces the set of targets polled. New ones are due at
// once; ones no longer named are dropped with their state. Repository
// references may be spelled any way ("nginx" or "docker.io/library/nginx");
// an unparseable one is logged and skipped.
func (p *Poller) SetInterests(interests map[Target]Interest) {
	p.init()
	p.mu.Lock()
	defer p.mu.Unlock()
	want := make(map[pollKey]Interest, len(interests))
	parsed := make(map[string]Repository, len(interests))
	for t, in := range interests {
		pr := p.parse(t.Repo)
		if pr.err != nil {
			continue
		}
		k := pollKey{repo: pr.key, client: p.identity(t.Client)}
		if old, ok := want[k]; ok { // two spellings of one repository
			in = old.Merge(in)
		}
		want[k], parsed[pr.key] = in, pr.repo
	}
	p.pruneRefs(interests)
	var dropped []*Client // clients of targets dropped
	for k := range p.repos {
		if _, ok := want[k]; !ok {
			delete(p.repos, k)
			dropped = append(dropped, k.client)
		}
	}
	now := p.Now()
	for k, in := range want {
		if r := p.repos[k]; r != nil {
			p.update(r, in, now)
			continue
		}
		p.repos[k] = &polledRepo{key: k.repo, repo: parsed[k.repo], client: k.client, interest: in, next: now}
	}
	p.retain(parsed, dropped)
	p.signal()
}

// retain has the clients and metrics drop what they keep for
// repositories and hosts no target uses any more, once some are gone: an
// annotation may name any repository on any host, and what is kept for
// it must not outlive its use. repos are the repositories polled now,
// dropped the clients of targets just dropped. p.mu must be held.
func (p *Poller) retain(repos map[string]Repository, dropped []*Client) {
	hosts := make(map[string]bool, len(p.hosts))
	for _, repo := range repos {
		hosts[GGCRHost(repo.Host())] = true
	}
	hostGone := false
	for host := range p.hosts {
		if !hosts[host] {
			hostGone = true
			break
		}
	}
	p.hosts = hosts
	if !hostGone && len(dropped) == 0 {
		return
	}
	inUse := make(map[string]bool, len(repos))
	for key := range repos {
		inUse[key] = true
	}
	clients := map[*Client]bool{p.Client: true}
	for k := range p.repos {
		clients[k.client] = true
	}
	for _, c := range dropped {
		clients[c] = true
	}
	delete(clients, nil)
	for c := range clients {
		c.Retain(inUse)
	}
	if hostGone {
		p.Metrics.RetainHosts(hosts)
	}
}

// update applies a target's new interest. p.mu must be held.
func (p *Poller) update(r *polledRepo, in Interest, now time.Time) {
	if r.interest.Interval != in.Interval && r.polled {
		r.next = now.Add(p.interval(in)) // a new interval starts now
	}
	if !slices.Equal(r.interest.TrackDigests, in.TrackDigests) {
		r.next, r.baseline = now, true // a newly tracked digest needs a baseline
	}
	r.interest = in
}

// identity is the key of c's targets: nil for the poller's own Client.
func (p *Poller) identity(c *Client) *Client {
	if c == p.Client {
		return nil
	}
	return c
}

// clientOf is the client that polls r.
func (p *Poller) clientOf(r *polledRepo) *Client {
	if r.client != nil {
		return r.client
	}
	return p.Client
}

// pruneRefs drops parsed references no longer among interests once they
// are most of the cache. p.mu must be held.
func (p *Poller) pruneRefs(interests map[Target]Interest) {
	if len(p.refs) <= 2*len(interests) {
		return
	}
	inUse := make(map[string]bool, len(interests))
	for t := range interests {
		inUse[t.Repo] = true
	}
	for ref := range p.refs {
		if !inUse[ref] {
			delete(p.refs, ref)
		}
	}
}

// parsedRef is a repository reference as ParseRepo read it.
type parsedRef struct {
	repo Repository
	key  string // RepoKey(repo)
	err  error
}

// parse reads ref once while it stays among the interests: a cold start
// hands the poller the whole set once per new repository, and parsing
// every reference again each time was quadratic in the repositories
// (500 of them: 250,000 parses). An unparseable one is logged once.
// p.mu must be held.
func (p *Poller) parse(ref string) parsedRef {
	if pr, ok := p.refs[ref]; ok {
		return pr
	}
	repo, err := ParseRepo(ref)
	if err != nil {
		p.Log.Warn("not polling invalid repository", "repository", ref, "error", err)
	}
	if p.refs == nil {
		p.refs = map[string]parsedRef{}
	}
	pr := parsedRef{repo: repo, err: err}
	if err == nil {
		pr.key = RepoKey(repo)
	}
	p.refs[ref] = pr
	return pr
}

// Merge joins two interests in one target (two Applications, or two
// spellings of its name): the shorter interval, every tracked digest.
func (a Interest) Merge(b Interest) Interest {
	if b.Interval > 0 && (a.Interval == 0 || b.Interval < a.Interval) {
		a.Interval = b.Interval
	}
	tags := append(slices.Clone(a.TrackDigests), b.TrackDigests...)
	slices.Sort(tags)
	a.TrackDigests = slices.Compact(tags)
	return a
}

// Refresh polls a repository now through every client that reads it, as
// a registry webhook asks. It reports false for a repository nobody uses
// (nothing to do).
func (p *Poller) Refresh(ref string) bool {
	p.init()
	repo, err := ParseRepo(ref)
	if err != nil {
		return false
	}
	key := RepoKey(repo)
	p.mu.Lock()
	var clients []*Client
	known := false
	for k, r := range p.repos { // a webhook's rare call: no index by repository
		if k.repo != key {
			continue
		}
		known = true
		r.next = p.Now()
		r.refreshed = true
		if c := p.clientOf(r); c != nil {
			clients = append(clients, c)
		}
	}
	p.mu.Unlock()
	if !known {
		return false
	}
	p.Metrics.refresh("webhook")
	for _, c := range clients {
		c.MarkStale(key)
	}
	p.signal()
	return true
}

func (p *Poller) signal() { notify(p.wake) }

func notify(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

func (p *Poller) interval(in Interest) time.Duration {
	if in.Interval > 0 {
		return in.Interval
	}
	return p.Interval
}

// poll polls one target that take took, under PollTimeout, and reports
// what changed.
func (p *Poller) poll(ctx context.Context, r *polledRepo) {
	p.mu.Lock()
	in, refreshed := r.interest, r.refreshed
	r.refreshed, r.baseline = false, false
	// The first poll only records a baseline: it takes the tag list the
	// client cached for the reconciles that just selected from it (one list
	// per repository on a cold start, and no tag slips in between their view
	// and the baseline), however old while Hold holds. Later polls always
	// ask the registry.
	maxAge := time.Duration(-1)
	first := !r.polled
	p.mu.Unlock()
	if first && refreshed {
		first = !p.baselineFromCache(r, in)
	}
	if first {
		maxAge = 0
		if p.Hold != nil && p.Hold.InFirstPass() {
			maxAge = HoldMaxAge
		}
	}
	pctx, cancel := context.WithTimeout(ctx, min(p.PollTimeout, p.interval(in)))
	defer cancel()
	slow := time.AfterFunc(p.SlowAfter, func() { p.slowed(r) })
	tags, digests, err := p.fetch(pctx, p.clientOf(r), r.repo, in, maxAge)
	slow.Stop()
	ch, changed := p.record(ctx, r, tags, digests, err)
	ch.Refreshed = refreshed
	if changed && p.Listener != nil {
		p.Listener.RepoChanged(ctx, ch)
	}
}

// baselineFromCache makes what r's client last read of the repository,
// stale or not, r's baseline, when a webhook's refresh comes before r's
// first poll: the reconciles selected from that list, and a baseline
// read after the push would take the pushed tag in unreported.
func (p *Poller) baselineFromCache(r *polledRepo, in Interest) bool {
	tags, digests, ok := p.clientOf(r).cachedView(r.repo, in.TrackDigests)
	if !ok {
		return false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	r.polled, r.tags, r.digests = true, tags, digests
	return true
}

// record stores a poll's outcome and says whether it is a change.
func (p *Poller) record(ctx context.Context, r *polledRepo, tags []string, digests map[string]string, err error) (RepoChange, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !r.refreshed { // a refresh asked for during the poll stays due
		r.next = p.Now().Add(p.interval(r.interest))
	}
	p.done(r)
	if p.repos[pollKey{r.key, r.client}] != r {
		return RepoChange{}, false // dropped while polling
	}
	if err != nil {
		if ctx.Err() == nil {
			p.Metrics.poll("error")
			p.Log.Warn("polling repository failed", "repository", r.key, "pull_secret", r.client != nil, "error", err)
		}
		return RepoChange{}, false
	}
	ch := RepoChange{Repo: r.key, Client: r.client, Tags: tags}
	ch.Added, ch.Removed = diffSorted(r.tags, tags)
	for tag, d := range digests {
		if old, ok := r.digests[tag]; ok && old != d {
			if ch.Digests == nil {
				ch.Digests = map[string]string{}
			}
			ch.Digests[tag] = d
		}
	}
	first := !r.polled
	r.polled, r.tags, r.digests = true, tags, digests
	if first || (len(ch.Added) == 0 && len(ch.Removed) == 0 && len(ch.Digests) == 0) {
		p.Metrics.poll("unchanged")
		return RepoChange{}, false
	}
	p.Metrics.poll("changed")
	p.Log.Debug("repository changed", "repository", r.key, "added", len(ch.Added), "removed", len(ch.Removed), "digests", len(ch.Digests))
	return ch, true
}

func (p *Poller) fetch(ctx context.Context, client *Client, repo Repository, in Interest, maxAge time.Duration) ([]string, map[string]string, error) {
	tags, err := client.Tags(ctx, repo, maxAge)
	if err != nil {
		return nil, nil, err
	}
	tags = slices.Clone(tags)
	slices.Sort(tags)
	digests := map[string]string{}
	for _, tag := range in.TrackDigests {
		if _, ok := slices.BinarySearch(tags, tag); !ok {
			continue // not there (yet): the tag set change says so
		}
		d, err := client.Digest(ctx, repo, tag, maxAge)
		if err != nil {
			return nil, nil, err
		}
		digests[tag] = d
	}
	return tags, digests, nil
}

// diffSorted returns what b adds to and removes from a; both sorted.
func diffSorted(a, b []string) (added, removed []string) {
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		switch {
		case j == len(b) || (i < len(a) && a[i] < b[j]):
			removed = append(removed, a[i])
			i++
		case i == len(a) || b[j] < a[i]:
			added = append(added, b[j])
			j++
		default:
			i++
			j++
		}
	}
	return added, removed
}

// Repos lists the repositories being polled, sorted.
func (p *Poller) Repos() []string {
	p.init()
	p.mu.Lock()
	defer p.mu.Unlock()
	keys := make([]string, 0, len(p.repos))
	for k := range p.repos {
		keys = append(keys, k.repo)
	}
	slices.Sort(keys)
	return slices.Compact(keys)
}
