package controller_test

import (
	"sync"
	"testing"
	"time"

	"github.com/crowsnest-dev/crowsnest/controller"
	"github.com/crowsnest-dev/crowsnest/internal/kubecore/kubecoretest"
	"github.com/crowsnest-dev/crowsnest/internal/testwait"
	"github.com/crowsnest-dev/crowsnest/watcher"
)

// Short lease timings so failover is quick; the relation between them is the
// one client-go requires (duration > deadline > retry * 1.2).
const (
	testLeaseDuration = 4 * time.Second
	testRenewDeadline = 3 * time.Second
	testRetryPeriod   = 500 * time.Millisecond
)

func TestLeaderElectionOneReconcilerAndFailover(t *testing.T) {
	ns := env.CreateNamespace(t, "leader")
	cs := kubecoretest.New(t, env.Config)
	newEngine := func(id string, rec *recorder) *controller.Engine {
		return &controller.Engine{
			Sources:    []controller.Source{&watcher.KubeSource{Client: dynClient(t), Namespaces: []string{ns}}},
			Reconciler: rec,
			LeaderElection: &controller.LeaderElection{
				Client: cs, Namespace: ns, Name: "crowsnest", Identity: id,
				LeaseDuration: testLeaseDuration, RenewDeadline: testRenewDeadline, RetryPeriod: testRetryPeriod,
			},
		}
	}
	recA, recB := &recorder{}, &recorder{}
	engA, engB := newEngine("a", recA), newEngine("b", recB)
	stopA := runEngine(t, engA)
	stopB := runEngine(t, engB)

	createApp(t, ns, "one")
	testwait.For(t, "one engine to reconcile", func() bool {
		return len(recA.requests())+len(recB.requests()) >= 1
	})
	leader, standby, stopLeader := engA, engB, stopA
	leaderRec, standbyRec := recA, recB
	if len(recB.requests()) > 0 {
		leader, standby, stopLeader = engB, engA, stopB
		leaderRec, standbyRec = recB, recA
	}
	createApp(t, ns, "two")
	testwait.For(t, "the leader to reconcile two", func() bool { return leaderRec.count(ns+"/two") == 1 })
	testwait.For(t, "the standby to be ready", func() bool { return standby.Ready() == nil })
	if n := len(standbyRec.requests()); n != 0 {
		t.Fatalf("standby reconciled %d times while the other replica led", n)
	}
	if !leader.Leading() || standby.Leading() {
		t.Fatalf("Leading(): leader=%v standby=%v", leader.Leading(), standby.Leading())
	}

	// Cancel the leader: its workers drain, the lease is released, and the
	// standby takes over within the lease duration.
	stopped := time.Now()
	stopLeader()
	var takeover time.Duration
	var once sync.Once
	testwait.For(t, "the standby to take over", func() bool {
		if standby.Leading() {
			once.Do(func() { takeover = time.Since(stopped) })
		}
		return standby.Leading()
	})
	if takeover > testLeaseDuration {
		t.Errorf("takeover took %s, longer than the lease duration %s", takeover, testLeaseDuration)
	}
	// The new leader works through the keys it queued while standing by and
	// handles new ones.
	createApp(t, ns, "three")
	testwait.For(t, "the new leader to reconcile everything", func() bool {
		return standbyRec.count(ns+"/one") >= 1 && standbyRec.count(ns+"/two") >= 1 && standbyRec.count(ns+"/three") >= 1
	})
	if n := leaderRec.count(ns + "/three"); n != 0 {
		t.Errorf("the stopped leader reconciled an application created after it stopped")
	}
}
