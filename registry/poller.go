package registry

import (
	"context"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"
)

// Interest says a repository is in use by some Application or policy.
type Interest struct {
	// Interval between polls; zero uses the poller's default.
	Interval time.Duration
	// TrackDigests lists mutable tags whose digest matters (the digest
	// strategy); a new digest is a change even when the tag set is not.
	TrackDigests []string
	// Client polls the repository when it needs its own credentials (an
	// image's pull secret); nil is the poller's Client. Sharing the
	// client the selection uses keeps one cache of tags and digests.
	Client *Client
}

// RepoChange is a repository whose tags or tracked digests changed.
type RepoChange struct {
	Repo    string
	Added   []string
	Removed []string
	// Tags is the new tag set, sorted.
	Tags []string
	// Digests maps each tracked tag whose digest changed to its new digest.
	Digests map[string]string
	// Refreshed is true when a webhook or manual refresh started the poll.
	Refreshed bool
}

// Poller defaults: two minutes is argocd-image-updater's cycle; four
// repositories at once keeps a poll of many repositories moving while each
// registry's own limits pace the requests.
const (
	DefaultPollInterval    = 2 * time.Minute
	DefaultPollConcurrency = 4
	// HoldMaxAge is the oldest tag list a first poll takes while Hold
	// holds; holdRecheck is how often held polls ask Hold again.
	HoldMaxAge  = 10 * time.Minute
	holdRecheck = time.Second
)

// Poller polls the repositories in use, each on its interval, and reports
// a RepoChange only when a tag set or tracked digest changed. The first
// poll of a repository only records what is there.
type Poller struct {
	Client *Client
	// Interval is the default poll interval.
	Interval time.Duration
	// Concurrency bounds repositories polled at once.
	Concurrency int
	// OnChange receives changes; it should hand them to a queue, not block.
	OnChange func(ctx context.Context, ch RepoChange)
	// Hold, when set and true, holds back the polls after a repository's
	// first while the engine still works through its first pass: a pass
	// longer than the poll interval would list every repository again
	// before it used the first list. The first poll then takes the list the
	// pass read, however old (up to HoldMaxAge). A webhook's refresh is
	// never held.
	Hold    func() bool
	Metrics *Metrics
	Log     *slog.Logger
	// Now is the clock for schedules; nil is time.Now.
	Now func() time.Time

	initOnce sync.Once
	mu       sync.Mutex
	repos    map[string]*polledRepo
	refs     map[string]parsedRef // SetInterests' references, parsed
	wake     chan struct{}
}

type polledRepo struct {
	repo      Repository
	interest  Interest
	next      time.Time
	polled    bool
	refreshed bool
	polling   bool
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
		if p.Log == nil {
			p.Log = slog.New(slog.DiscardHandler)
		}
		if p.Now == nil {
			p.Now = time.Now
		}
		p.repos = map[string]*polledRepo{}
		p.wake = make(chan struct{}, 1)
	})
}

// SetInterests replaces the set of repositories polled. New ones are due
// at once; ones no longer named are dropped with their state. Keys are
// repository references ("nginx" or "docker.io/library/nginx"); an
// unparseable one is logged and skipped.
func (p *Poller) SetInterests(interests map[string]Interest) {
	p.init()
	p.mu.Lock()
	defer p.mu.Unlock()
	want := make(map[string]Interest, len(interests))
	parsed := make(map[string]Repository, len(interests))
	for ref, in := range interests {
		pr := p.parse(ref)
		if pr.err != nil {
			continue
		}
		key := pr.key
		if old, ok := want[key]; ok { // two spellings of one repository
			in = old.Merge(in)
		}
		want[key], parsed[key] = in, pr.repo
	}
	if len(p.refs) > 2*len(interests) {
		for ref := range p.refs {
			if _, ok := interests[ref]; !ok {
				delete(p.refs, ref)
			}
		}
	}
	for key := range p.repos {
		if _, ok := want[key]; !ok {
			delete(p.repos, key)
		}
	}
	now := p.Now()
	for key, in := range want {
		if r := p.repos[key]; r != nil {
			if r.interest.Interval != in.Interval && r.polled {
				r.next = now.Add(p.interval(in)) // a new interval starts now
			}
			if !slices.Equal(r.interest.TrackDigests, in.TrackDigests) {
				r.next, r.baseline = now, true // a newly tracked digest needs a baseline
			}
			r.interest = in
			continue
		}
		p.repos[key] = &polledRepo{repo: parsed[key], interest: in, next: now}
	}
	p.signal()
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

// Merge joins two interests in one repository (two Applications, or two
// spellings of its name): the shorter interval, every tracked digest, the
// first pull-secret client.
func (a Interest) Merge(b Interest) Interest {
	if b.Interval > 0 && (a.Interval == 0 || b.Interval < a.Interval) {
		a.Interval = b.Interval
	}
	tags := append(slices.Clone(a.TrackDigests), b.TrackDigests...)
	slices.Sort(tags)
	a.TrackDigests = slices.Compact(tags)
	if a.Client == nil {
		a.Client = b.Client
	}
	return a
}

// Refresh polls a repository now, as a registry webhook asks. It reports
// false for a repository nobody uses (nothing to do).
func (p *Poller) Refresh(ref string) bool {
	p.init()
	repo, err := ParseRepo(ref)
	if err != nil {
		return false
	}
	key := RepoKey(repo)
	p.mu.Lock()
	r := p.repos[key]
	if r != nil {
		r.next = p.Now()
		r.refreshed = true
	}
	p.mu.Unlock()
	if r == nil {
		return false
	}
	p.Metrics.refresh("webhook")
	if p.Client != nil {
		p.Client.MarkStale(key)
	}
	p.signal()
	return true
}

func (p *Poller) signal() {
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

func (p *Poller) interval(in Interest) time.Duration {
	if in.Interval > 0 {
		return in.Interval
	}
	return p.Interval
}

// Start polls until ctx is cancelled.
func (p *Poller) Start(ctx context.Context) error {
	p.init()
	for {
		due, wait := p.due()
		if len(due) > 0 {
			p.pollAll(ctx, due)
			continue
		}
		timer := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			timer.Stop()
			return nil
		case <-p.wake:
		case <-timer.C:
		}
		timer.Stop()
	}
}

// idleWait is how long the loop sleeps with nothing to poll; SetInterests
// and Refresh wake it sooner.
const idleWait = time.Hour

// due returns the repositories to poll now, or how long until the next.
func (p *Poller) due() ([]string, time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.Now()
	var due []string
	wait := idleWait
	holding := -1 // not asked yet
	for key, r := range p.repos {
		if r.polling {
			continue
		}
		if d := r.next.Sub(now); d > 0 {
			wait = min(wait, d)
			continue
		}
		if r.polled && !r.refreshed && !r.baseline && p.Hold != nil {
			if holding < 0 {
				holding = 0
				if p.Hold() {
					holding = 1
				}
			}
			if holding == 1 {
				wait = min(wait, holdRecheck)
				continue
			}
		}
		r.polling = true
		due = append(due, key)
	}
	slices.Sort(due)
	return due, wait
}

func (p *Poller) pollAll(ctx context.Context, keys []string) {
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(p.Concurrency)
	for _, key := range keys {
		g.Go(func() error {
			p.poll(gctx, key)
			return nil
		})
	}
	_ = g.Wait()
}

func (p *Poller) poll(ctx context.Context, key string) {
	p.mu.Lock()
	r := p.repos[key]
	if r == nil {
		p.mu.Unlock()
		return
	}
	repo, in, refreshed := r.repo, r.interest, r.refreshed
	r.refreshed, r.baseline = false, false
	// The first poll only records a baseline: it takes the tag list the
	// client cached for the reconciles that just selected from it (one list
	// per repository on a cold start, and no tag slips in between their view
	// and the baseline), however old while Hold holds. Later polls always
	// ask the registry.
	maxAge := time.Duration(-1)
	first := !r.polled
	p.mu.Unlock()
	if first {
		maxAge = 0
		if p.Hold != nil && p.Hold() {
			maxAge = HoldMaxAge
		}
	}

	tags, digests, err := p.fetch(ctx, repo, in, maxAge)
	ch, changed := p.record(ctx, key, r, tags, digests, err)
	ch.Refreshed = refreshed
	if changed && p.OnChange != nil {
		p.OnChange(ctx, ch)
	}
}

// record stores a poll's outcome and says whether it is a change.
func (p *Poller) record(ctx context.Context, key string, r *polledRepo, tags []string, digests map[string]string, err error) (RepoChange, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	r.polling = false
	if !r.refreshed { // a refresh asked for during the poll stays due
		r.next = p.Now().Add(p.interval(r.interest))
	}
	if p.repos[key] != r {
		return RepoChange{}, false // dropped while polling
	}
	if err != nil {
		if ctx.Err() == nil {
			p.Metrics.poll("error")
			p.Log.Warn("polling repository failed", "repository", key, "error", err)
		}
		return RepoChange{}, false
	}
	ch := RepoChange{Repo: key, Tags: tags}
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
	p.Log.Debug("repository changed", "repository", key, "added", len(ch.Added), "removed", len(ch.Removed), "digests", len(ch.Digests))
	return ch, true
}

func (p *Poller) fetch(ctx context.Context, repo Repository, in Interest, maxAge time.Duration) ([]string, map[string]string, error) {
	client := p.Client
	if in.Client != nil {
		client = in.Client
	}
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
	return slices.Sorted(maps.Keys(p.repos))
}
