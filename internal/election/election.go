package election

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/crowsnest-dev/crowsnest/internal/kubecore"
)

// errLeaseNotRead is the optimistic write's failure before any read.
var errLeaseNotRead = errors.New("lease not read yet")

// JitterFactor spreads the candidates' attempts to acquire, and is the
// least ratio of RenewDeadline to RetryPeriod: the leader gets more than
// one try to renew before its deadline (client-go's value).
const JitterFactor = 1.2

// Elector campaigns for the Lease Namespace/Name as Identity. Set every
// field but Log before Run; Run it once.
type Elector struct {
	Client    kubecore.LeasesGetter
	Namespace string
	Name      string
	Identity  string
	// LeaseDuration is how long a candidate waits, from the last change of
	// the Lease it saw, before it takes the Lease from a silent holder.
	LeaseDuration time.Duration
	// RenewDeadline is how long the leader tries to renew before it gives
	// up leading.
	RenewDeadline time.Duration
	// RetryPeriod is the pause between attempts to acquire or renew.
	RetryPeriod time.Duration
	// ReleaseOnCancel frees the Lease when Run's context ends while
	// leading, so that another candidate takes over at once. Only set it
	// when everything done as leader has stopped by then.
	ReleaseOnCancel bool
	// Leader is told when leading starts and stops; required.
	Leader Leader
	Log    *slog.Logger

	// lease is the Lease as last read or written: its resourceVersion
	// makes the next write fail if anyone else wrote in between. Only
	// Run's goroutine uses it.
	lease *coordinationv1.Lease
	// observed is the Lease's spec as last seen, observedAt when it was
	// first seen so (by this clock, not the holder's). Run's goroutine
	// writes them holding mu, and reads them without.
	mu         sync.Mutex
	observed   coordinationv1.LeaseSpec
	observedAt time.Time
}

// Leader is what an Elector tells when it starts and stops leading (the
// controller's campaign: the engine's workers run while it leads).
type Leader interface {
	// StartedLeading runs in a goroutine of its own when the Lease is
	// acquired; its context ends when leading does.
	StartedLeading(ctx context.Context)
	// StoppedLeading runs when Run returns, whether it led or not.
	StoppedLeading()
}

// Validate reports a setting Run cannot work with.
func (e *Elector) Validate() error {
	switch {
	case e.LeaseDuration <= e.RenewDeadline:
		return errors.New("leaseDuration must be greater than renewDeadline")
	case e.RenewDeadline <= time.Duration(JitterFactor*float64(e.RetryPeriod)):
		return fmt.Errorf("renewDeadline must be greater than retryPeriod*%v", JitterFactor)
	case e.RetryPeriod <= 0:
		return errors.New("retryPeriod must be greater than zero")
	case e.Identity == "":
		return errors.New("identity must not be empty")
	case e.Client == nil || e.Name == "":
		return errors.New("a Lease client and name are required")
	case e.Leader == nil:
		return errors.New("a Leader is required")
	}
	return nil
}

// Run campaigns until ctx ends or, once leading, until the Lease cannot
// be renewed. It calls Leader.StoppedLeading before it returns.
func (e *Elector) Run(ctx context.Context) {
	if e.Log == nil {
		e.Log = slog.New(slog.DiscardHandler)
	}
	defer e.Leader.StoppedLeading()
	if !e.acquire(ctx) {
		return
	}
	lctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go e.Leader.StartedLeading(lctx)
	e.renew(lctx)
}

// IsLeader reports whether this candidate held the Lease when it last
// looked.
func (e *Elector) IsLeader() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.leading()
}

// leading reports whether the Lease as observed names this candidate.
func (e *Elector) leading() bool {
	return e.observed.HolderIdentity != nil && *e.observed.HolderIdentity == e.Identity
}

// observe records spec as the Lease last seen, at now.
func (e *Elector) observe(spec *coordinationv1.LeaseSpec, now time.Time) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.observed, e.observedAt = *spec.DeepCopy(), now
}

// Check is a health check: it fails when this candidate leads but has not
// renewed the Lease for longer than LeaseDuration plus grace.
func (e *Elector) Check(grace time.Duration) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if !e.leading() {
		return nil
	}
	if time.Since(e.observedAt) > e.LeaseDuration+grace {
		return fmt.Errorf("failed election to renew leadership on lease %s", e.Name)
	}
	return nil
}

func (e *Elector) describe() string { return e.Namespace + "/" + e.Name }

// acquire tries every RetryPeriod (jittered) until it holds the Lease or
// ctx ends; it reports whether it holds it.
func (e *Elector) acquire(ctx context.Context) bool {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	acquired := false
	e.Log.Info("attempting to acquire leader lease", "lease", e.describe())
	wait.JitterUntil(func() {
		if acquired = e.tryAcquireOrRenew(ctx); acquired {
			e.Log.Info("successfully acquired lease", "lease", e.describe())
			cancel()
		}
	}, e.RetryPeriod, JitterFactor, true, ctx.Done())
	return acquired
}

// renew renews the Lease every RetryPeriod until ctx ends or a renewal
// does not succeed within RenewDeadline, then releases it if asked to.
func (e *Elector) renew(ctx context.Context) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	wait.Until(func() {
		err := wait.PollUntilContextTimeout(ctx, e.RetryPeriod, e.RenewDeadline, true, func(ctx context.Context) (bool, error) {
			return e.tryAcquireOrRenew(ctx), nil
		})
		if err == nil {
			return
		}
		e.Log.Info("failed to renew lease", "lease", e.describe(), "error", err)
		cancel()
	}, e.RetryPeriod, ctx.Done())
	if e.ReleaseOnCancel {
		e.release()
	}
}
