package faults

import (
	"fmt"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crowsnest-dev/crowsnest/internal/testwait"
)

// Short lease timings so failover is quick; client-go requires
// leaseDuration > renewDeadline > retryPeriod * 1.2.
const (
	haLeaseDuration = 4 * time.Second
	haRenewDeadline = 3 * time.Second
	haRetryPeriod   = 500 * time.Millisecond
)

const becameLeader = `"msg":"became leader; reconciling"`

// Two replicas with leader election under registry, Git and webhook
// faults: only the leader writes and notifies; the leader is SIGKILLed
// mid-run (its lease is not released) and the standby takes over within
// the lease duration (plus its retry period, the granularity at which it
// looks); nothing is committed twice and no message repeats beyond the
// crash bound.
func TestHAFailover(t *testing.T) {
	w := newWorld(t, "ha", worldOptions{kubeApps: 20, gitApps: 20, repos: 4, hooks: 4,
		leaderElection: fmt.Sprintf("enabled: true, leaseDuration: %s, renewDeadline: %s, retryPeriod: %s", haLeaseDuration, haRenewDeadline, haRetryPeriod)})

	// The same faults as the single-replica scenarios, at once: the
	// registry answers 503 for a while, another client races the first
	// push, the next push is refused, the webhook answers 500s.
	start := time.Now()
	var regFaults atomic.Int64
	w.reg.SetFault(func(rw http.ResponseWriter, _ *http.Request) bool {
		if time.Since(start) > 6*time.Second {
			return false
		}
		regFaults.Add(1)
		http.Error(rw, "registry failing", http.StatusServiceUnavailable)
		return true
	})
	var raced atomic.Int64
	w.git.BeforePush(func() {
		raced.Add(1)
		w.git.Seed(t, gitRepo, "main", map[string]string{"other/change.txt": "theirs\n"}, "concurrent change")
	})
	w.git.RejectPushes(1)
	w.sink.setFault(t, sink5xx)

	a, b := w.daemon(t, "replica-a"), w.daemon(t, "replica-b")
	a.start(t)
	b.start(t)
	restarts := supervise(t, a, b)
	var leader, standby *daemon
	testwait.Within(t, "a leader", time.Minute, func() bool {
		switch {
		case a.count(becameLeader) > 0:
			leader, standby = a, b
		case b.count(becameLeader) > 0:
			leader, standby = b, a
		}
		return leader != nil
	})
	standby.waitReady(t)

	// Kill the leader once it has started writing, with work left.
	testwait.Within(t, "the leader's first update", 2*time.Minute, func() bool { return leader.count(`"msg":"images updated"`) > 0 })
	w.sink.setFault(t, sinkOK)
	if n := standby.count(`"msg":"images updated"`) + standby.count(`"msg":"notification queued"`); n > 0 {
		t.Errorf("the standby acted %d times while the other replica led", n)
	}
	if standby.count(becameLeader) > 0 {
		t.Fatalf("both replicas became leader")
	}
	before := leader.count(`"msg":"images updated"`)
	leader.kill(t)
	killed := time.Now()
	testwait.Within(t, "the standby to take over", 2*haLeaseDuration+10*time.Second, func() bool { return standby.count(becameLeader) > 0 })
	failover := time.Since(killed)
	leader.start(t) // as a kubelet would; it comes back as the standby

	bound := 4 // the crash bound: one message per destination sending at the kill
	tl := finish(t, w, start, "HA: leader SIGKILLed, standby takes over", func() string {
		return fmt.Sprintf("2 replicas; registry 503 for 6s (%d requests), %d concurrent push, 1 refused push, webhook 500/503 until the first update; leader SIGKILLed after %d updates; failover in %s",
			regFaults.Load(), raced.Load(), before, failover.Round(100*time.Millisecond))
	}, bound, a, b)
	// The standby cannot act before the lease expires: at most
	// leaseDuration after the kill (the last renewal came before it). It
	// counts the lease from when it saw that renewal, up to one retry
	// period late, and client-go spaces its tries by retryPeriod with
	// jitter factor 1.2 (up to 2.2 retry periods apart). The last second
	// is for scheduling: CI runs this next to other packages' tests on two
	// cores, and the race detector slows the replicas down.
	limit := haLeaseDuration + haRetryPeriod + time.Duration(2.2*float64(haRetryPeriod)) + time.Second
	t.Logf("failover took %s (lease %s, retry %s); duplicate notifications %d; supervisor restarts %d", failover, haLeaseDuration, haRetryPeriod, tl.notDup, restarts())
	note("HA: failover took %s after SIGKILL of the leader (leaseDuration %s, retryPeriod %s).", failover.Round(10*time.Millisecond), haLeaseDuration, haRetryPeriod)
	if failover > limit {
		t.Errorf("failover took %s, want within the lease duration plus the standby's retry granularity (%s)", failover, limit)
	}
	if n := restarts(); n > 0 {
		t.Errorf("replicas ended by themselves %d times (lost leases) during the run", n)
	}
	if n := leader.countRun(leader.run(), becameLeader); n > 0 {
		t.Errorf("the restarted replica took the lease from the new leader")
	}
}
