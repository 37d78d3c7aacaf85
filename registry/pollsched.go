package registry

import (
	"cmp"
	"context"
	"slices"
	"sync"
	"time"
)

// DefaultSlowAfter is how long a poll counts against the poller's
// Concurrency: a tag list takes well under a second from a healthy
// registry, so a poll still running after ten seconds is most likely
// waiting on a host that does not answer, and the other hosts' polls
// should not wait with it.
const DefaultSlowAfter = 10 * time.Second

// slowPerSlot bounds the slow polls (past SlowAfter) per slot of
// Concurrency: they cost a goroutine and a connection each, so hosts
// that never answer may not start unbounded numbers of them.
const slowPerSlot = 4

// idleWait is how long the loop sleeps with nothing to poll; SetInterests,
// Refresh and a poll that ends wake it sooner.
const idleWait = time.Hour

// slots counts the polls in flight: running ones hold one of
// Concurrency's places, slow ones do not, and every one holds one of its
// host's PerHost.
type slots struct {
	running int
	slow    int
	perHost map[string]int
	// soonest is when the soonest of the polls ended since the last scan
	// is due again.
	soonest time.Time
}

// pollQueue holds the due targets not started yet, per host, each host's
// oldest due first; take serves the hosts in turn.
type pollQueue struct {
	hosts  []string
	byHost map[string][]*polledRepo
}

// Start polls until ctx is cancelled, and returns once the polls in
// flight have ended.
func (p *Poller) Start(ctx context.Context) error {
	p.init()
	var wg sync.WaitGroup
	defer wg.Wait()
	var q pollQueue
	wait := p.scan(&q)
	at := p.Now().Add(wait) // when the timer fires, on p.Now's clock
	timer := time.NewTimer(wait)
	defer timer.Stop()
	for {
		for _, r := range p.take(&q) {
			wg.Go(func() { p.poll(ctx, r) })
		}
		select {
		case <-ctx.Done():
			return nil
		case <-p.freed:
			// The queue may start more, and a poll that ended is due
			// again, perhaps before the timer.
			if next := p.nextEnded(); next.Before(at) {
				at = next
				timer.Reset(max(0, next.Sub(p.Now())))
			}
			continue
		case <-p.wake:
		case <-timer.C:
		}
		wait = p.scan(&q)
		at = p.Now().Add(wait)
		timer.Reset(wait)
	}
}

// nextEnded is when the soonest of the polls that ended since the last
// scan is due again; far in the future when none ended.
func (p *Poller) nextEnded() time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.slots.soonest.IsZero() {
		return p.Now().Add(idleWait)
	}
	return p.slots.soonest
}

// scan fills q with the targets due now and says how long until the next
// one is due.
func (p *Poller) scan(q *pollQueue) time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.Now()
	p.slots.soonest = time.Time{}
	q.hosts, q.byHost = q.hosts[:0], map[string][]*polledRepo{}
	wait := idleWait
	holding := -1 // not asked yet
	for _, r := range p.repos {
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
				if p.Hold.InFirstPass() {
					holding = 1
				}
			}
			if holding == 1 {
				wait = min(wait, holdRecheck)
				continue
			}
		}
		host := r.repo.Host()
		if q.byHost[host] == nil {
			q.hosts = append(q.hosts, host)
		}
		q.byHost[host] = append(q.byHost[host], r)
	}
	slices.Sort(q.hosts)
	for _, rs := range q.byHost {
		slices.SortFunc(rs, func(a, b *polledRepo) int {
			return cmp.Or(a.next.Compare(b.next), cmp.Compare(a.key, b.key), cmp.Compare(rank(a), rank(b)))
		})
	}
	return wait
}

// rank orders one repository's targets: the poller's own client first.
func rank(r *polledRepo) int {
	if r.client == nil {
		return 0
	}
	return 1
}

// take starts as many of q's targets as Concurrency and PerHost allow,
// one host at a time in turn, and marks them polling.
func (p *Poller) take(q *pollQueue) []*polledRepo {
	p.mu.Lock()
	defer p.mu.Unlock()
	var started []*polledRepo
	for progress := true; progress; {
		progress = false
		for _, host := range q.hosts {
			rs := q.byHost[host]
			if p.slots.running >= p.Concurrency {
				break
			}
			if len(rs) == 0 || p.slots.perHost[host] >= p.PerHost {
				continue
			}
			r := rs[0]
			q.byHost[host], progress = rs[1:], true
			if r.polling || p.repos[pollKey{r.key, r.client}] != r {
				continue // started by an earlier look, or dropped since
			}
			p.slots.running++
			p.slots.perHost[host]++
			r.polling, r.slot = true, true
			started = append(started, r)
		}
	}
	q.hosts = slices.DeleteFunc(q.hosts, func(h string) bool { return len(q.byHost[h]) == 0 })
	return started
}

// slowed gives a poll's place among Concurrency back when it has run for
// SlowAfter, unless too many polls are slow already.
func (p *Poller) slowed(r *polledRepo) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !r.polling || !r.slot || p.slots.slow >= slowPerSlot*p.Concurrency {
		return
	}
	r.slot = false
	p.slots.running--
	p.slots.slow++
	p.Log.Debug("poll is slow; letting others start", "repository", r.key, "host", r.repo.Host())
	notify(p.freed)
}

// done ends r's poll in the counts, notes when it is due again (record
// set r.next) and wakes the loop for the targets it held back. p.mu must
// be held.
func (p *Poller) done(r *polledRepo) {
	if !r.polling {
		return
	}
	if p.slots.soonest.IsZero() || r.next.Before(p.slots.soonest) {
		p.slots.soonest = r.next
	}
	if r.slot {
		p.slots.running--
	} else {
		p.slots.slow--
	}
	host := r.repo.Host()
	p.slots.perHost[host]--
	if p.slots.perHost[host] <= 0 {
		delete(p.slots.perHost, host)
	}
	r.polling, r.slot = false, false
	notify(p.freed)
}
