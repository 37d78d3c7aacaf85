package registry

import (
	"math"
	"strings"
	"sync"

	"golang.org/x/time/rate"
)

// Endpoint is the registry endpoint that serves a repository, as
// argocd-image-updater's registries.conf entries are: each endpoint (a
// prefix such as "ghcr.io/team-a") is paced by its own rate limit and
// concurrency bound, so two prefixes on one host have independent limits.
// A zero Prefix means the repository is served by its host's pacing
// (HostConfig's RateLimit and MaxConcurrency).
type Endpoint struct {
	// Prefix names the endpoint; repositories with the same prefix share
	// one pacer.
	Prefix string
	// RateLimit, Burst and MaxConcurrency mean what HostConfig's fields
	// of those names mean; zero takes the same defaults.
	RateLimit      float64
	Burst          int
	MaxConcurrency int
}

// Pacer key prefixes: a host's own pacer, and an endpoint's.
const (
	hostPacer     = "host\x00"
	endpointPacer = "endpoint\x00"
)

// pacing is the part of an endpoint's settings a pacer is made from.
type pacing struct {
	rate        float64
	burst       int
	concurrency int
}

func (e Endpoint) pacing() pacing {
	c := HostConfig{RateLimit: e.RateLimit, Burst: e.Burst, MaxConcurrency: e.MaxConcurrency}.withDefaults()
	return pacing{rate: c.RateLimit, burst: c.Burst, concurrency: c.MaxConcurrency}
}

// pacer holds one endpoint's requests to its rate and concurrency bound.
type pacer struct {
	cfg     pacing
	limiter *rate.Limiter
	sem     chan struct{}
}

func newPacer(cfg pacing) *pacer {
	lim := rate.Limit(cfg.rate)
	if cfg.rate < 0 || math.IsInf(cfg.rate, 1) {
		lim = rate.Inf
	}
	return &pacer{cfg: cfg, limiter: rate.NewLimiter(lim, cfg.burst), sem: make(chan struct{}, cfg.concurrency)}
}

// Pacers holds the pacer of every registry endpoint. Clients that share
// one (the daemon's shared client and its per-pull-secret clients) pace
// their requests to an endpoint together, as argocd-image-updater's one
// limiter per endpoint does whatever credentials an image uses. The zero
// value is ready to use.
type Pacers struct {
	mu sync.Mutex
	m  map[string]*pacer
}

// get returns key's pacer, a new one when its settings changed (after a
// reload): requests in flight finish under the old one.
func (p *Pacers) get(key string, cfg pacing) *pacer {
	p.mu.Lock()
	defer p.mu.Unlock()
	if pc := p.m[key]; pc != nil && pc.cfg == cfg {
		return pc
	}
	if p.m == nil {
		p.m = map[string]*pacer{}
	}
	pc := newPacer(cfg)
	p.m[key] = pc
	return pc
}

// retainHosts drops the pacers of hosts inUse does not list; endpoints'
// pacers (the operator's entries) stay.
func (p *Pacers) retainHosts(inUse map[string]bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for key := range p.m {
		if host, ok := strings.CutPrefix(key, hostPacer); ok && !inUse[host] {
			delete(p.m, key)
		}
	}
}
