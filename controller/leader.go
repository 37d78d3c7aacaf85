package controller

import (
	"context"
	"fmt"
	"os"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/util/rand"

	"github.com/crowsnest-dev/crowsnest/internal/election"
	"github.com/crowsnest-dev/crowsnest/internal/kubecore"
)

// Leader election defaults, the same as kube-controller-manager's: a failed
// leader is replaced within about 15 s, and renewals tolerate apiserver
// hiccups of a few seconds.
const (
	DefaultLeaseDuration = 15 * time.Second
	DefaultRenewDeadline = 10 * time.Second
	DefaultRetryPeriod   = 2 * time.Second
	// healthzGrace is how long a leader may fail to renew before /healthz
	// reports it unhealthy.
	healthzGrace = 20 * time.Second
)

// LeaderElection configures the coordination.k8s.io Lease that decides which
// replica reconciles.
type LeaderElection struct {
	Client    kubecore.LeasesGetter
	Namespace string
	Name      string
	// Identity names this replica in the Lease; hostname plus a random
	// suffix if empty.
	Identity      string
	LeaseDuration time.Duration
	RenewDeadline time.Duration
	RetryPeriod   time.Duration
}

// runElected campaigns for the lease and runs the workers while leading. On
// shutdown the workers drain first and the lease is released after, so a new
// leader never overlaps an old one's reconciles.
func (e *Engine) runElected(ctx context.Context) error {
	le := e.LeaderElection
	identity := le.identity()

	// The elector's context ends only after our workers stopped.
	elCtx, elCancel := context.WithCancel(context.WithoutCancel(ctx))
	defer elCancel()
	work := &leaderTerms{}
	go func() {
		<-ctx.Done()
		work.stop()
		elCancel()
	}()

	elector := &election.Elector{
		Client:          le.Client,
		Namespace:       le.Namespace,
		Name:            le.Name,
		Identity:        identity,
		LeaseDuration:   orDefault(le.LeaseDuration, DefaultLeaseDuration),
		RenewDeadline:   orDefault(le.RenewDeadline, DefaultRenewDeadline),
		RetryPeriod:     orDefault(le.RetryPeriod, DefaultRetryPeriod),
		ReleaseOnCancel: true,
		Leader:          campaign{engine: e, ctx: ctx, identity: identity, work: work},
		Log:             e.Log,
	}
	if err := elector.Validate(); err != nil {
		return fmt.Errorf("leader election: %w", err)
	}
	e.mu.Lock()
	e.health = func() error { return elector.Check(healthzGrace) }
	e.mu.Unlock()

	elector.Run(elCtx)
	work.stop()
	if ctx.Err() != nil {
		return nil
	}
	return ErrLeadershipLost
}

// campaign is the engine as the elector's Leader: it runs the workers
// for each term of leadership.
type campaign struct {
	engine *Engine
	// ctx is the engine's: the workers stop when it or the term ends.
	ctx      context.Context
	identity string
	work     *leaderTerms
}

var _ election.Leader = campaign{}

func (c campaign) StartedLeading(lctx context.Context) {
	c.engine.lead(c.ctx, lctx, c.identity, c.work)
}

func (c campaign) StoppedLeading() {
	c.engine.leading.Store(false)
	c.engine.Metrics.setLeader(false)
	c.engine.Log.Info("stopped leading", "identity", c.identity)
}

// lead runs the workers for one term of leadership (lctx), unless the
// engine is stopping; they stop when the term or the engine's ctx ends.
func (e *Engine) lead(ctx, lctx context.Context, identity string, work *leaderTerms) {
	if !work.begin() {
		return
	}
	defer work.done()
	le := e.LeaderElection
	e.leading.Store(true)
	e.Metrics.setLeader(true)
	e.Log.Info("became leader; reconciling", "identity", identity, "lease", le.Namespace+"/"+le.Name)
	wctx, wcancel := context.WithCancel(lctx)
	defer wcancel()
	stop := context.AfterFunc(ctx, wcancel)
	defer stop()
	e.runWorkers(wctx)
}

// identity names this replica in the Lease: Identity, else the hostname
// plus a random suffix.
func (le *LeaderElection) identity() string {
	if le.Identity != "" {
		return le.Identity
	}
	host, _ := os.Hostname()
	return host + "_" + rand.String(8)
}

// leaderTerms tracks the terms of leadership whose workers run, so the
// lease is released only after they stopped, and no term starts work
// once the engine is stopping.
type leaderTerms struct {
	mu       sync.Mutex
	stopping bool
	working  sync.WaitGroup
}

// begin reports whether a term may start its workers; done must follow
// one that did.
func (w *leaderTerms) begin() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.stopping {
		return false
	}
	w.working.Add(1)
	return true
}

func (w *leaderTerms) done() { w.working.Done() }

// stop lets no term start work and waits for the one working.
func (w *leaderTerms) stop() {
	w.mu.Lock()
	w.stopping = true
	w.mu.Unlock()
	w.working.Wait()
}

func orDefault(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}
