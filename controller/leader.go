package controller

import (
	"context"
	"fmt"
	"os"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
	Client    kubernetes.Interface
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
	identity := le.Identity
	if identity == "" {
		host, _ := os.Hostname()
		identity = host + "_" + rand.String(8)
	}
	lock := &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Namespace: le.Namespace, Name: le.Name},
		Client:     le.Client.CoordinationV1(),
		LockConfig: resourcelock.ResourceLockConfig{Identity: identity},
	}
	watchdog := leaderelection.NewLeaderHealthzAdaptor(healthzGrace)

	// The elector's context ends only after our workers stopped.
	elCtx, elCancel := context.WithCancel(context.WithoutCancel(ctx))
	defer elCancel()
	var (
		mu       sync.Mutex
		stopping bool
		working  sync.WaitGroup
	)
	go func() {
		<-ctx.Done()
		mu.Lock()
		stopping = true
		mu.Unlock()
		working.Wait()
		elCancel()
	}()

	elector, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock:            lock,
		Name:            "crowsnest",
		LeaseDuration:   orDefault(le.LeaseDuration, DefaultLeaseDuration),
		RenewDeadline:   orDefault(le.RenewDeadline, DefaultRenewDeadline),
		RetryPeriod:     orDefault(le.RetryPeriod, DefaultRetryPeriod),
		ReleaseOnCancel: true,
		WatchDog:        watchdog,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(lctx context.Context) {
				mu.Lock()
				if stopping {
					mu.Unlock()
					return
				}
				working.Add(1)
				mu.Unlock()
				defer working.Done()
				e.leading.Store(true)
				e.Metrics.setLeader(true)
				e.Log.Info("became leader; reconciling", "identity", identity, "lease", le.Namespace+"/"+le.Name)
				wctx, wcancel := context.WithCancel(lctx)
				defer wcancel()
				stop := context.AfterFunc(ctx, wcancel)
				defer stop()
				e.runWorkers(wctx)
			},
			OnStoppedLeading: func() {
				e.leading.Store(false)
				e.Metrics.setLeader(false)
				e.Log.Info("stopped leading", "identity", identity)
			},
		},
	})
	if err != nil {
		return fmt.Errorf("leader election: %w", err)
	}
	e.mu.Lock()
	e.health = func() error { return watchdog.Check(nil) }
	e.mu.Unlock()

	elector.Run(elCtx)
	mu.Lock()
	stopping = true
	mu.Unlock()
	working.Wait()
	if ctx.Err() != nil {
		return nil
	}
	return ErrLeadershipLost
}

func orDefault(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}
