package election_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/crowsnest-dev/crowsnest/internal/election"
	"github.com/crowsnest-dev/crowsnest/internal/kubecore"
	"github.com/crowsnest-dev/crowsnest/internal/kubecore/kubecoretest"
	"github.com/crowsnest-dev/crowsnest/internal/testwait"
)

// Short timings in client-go's relation (duration > deadline > retry*1.2).
const (
	leaseDuration = 2 * time.Second
	renewDeadline = 1500 * time.Millisecond
	retryPeriod   = 250 * time.Millisecond
	// patience bounds every wait for something that must happen.
	patience = 15 * time.Second
)

// candidate is an Elector run in the background, its own Leader, which
// turns what it is told into channels.
type candidate struct {
	*election.Elector
	started chan struct{}   // closed when it starts leading
	once    sync.Once       // closes started
	term    context.Context // the leading term's context, once started
	done    chan struct{}   // closed when Run returned
	stopped chan struct{}   // closed when StoppedLeading ran
	cancel  context.CancelFunc
}

func (c *candidate) StartedLeading(ctx context.Context) {
	c.once.Do(func() { c.term = ctx; close(c.started) })
}

func (c *candidate) StoppedLeading() { close(c.stopped) }

func run(t *testing.T, client kubecore.LeasesGetter, ns, id string) *candidate {
	t.Helper()
	c := &candidate{started: make(chan struct{}), done: make(chan struct{}), stopped: make(chan struct{})}
	c.Elector = &election.Elector{
		Client: client, Namespace: ns, Name: "lease", Identity: id,
		LeaseDuration: leaseDuration, RenewDeadline: renewDeadline, RetryPeriod: retryPeriod,
		ReleaseOnCancel: true,
		Leader:          c,
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	c.cancel = cancel
	go func() {
		defer close(c.done)
		c.Run(ctx)
	}()
	t.Cleanup(c.stop)
	return c
}

// leader runs a candidate for a new Lease in a new namespace and waits
// until it leads.
func leader(t *testing.T, id string) (*kubecore.Clientset, string, *candidate) {
	t.Helper()
	client := kubecoretest.New(t, env.Config)
	ns := env.CreateNamespace(t, "election")
	c := run(t, client, ns, id)
	await(t, id+" to create and take the lease", c.started)
	return client, ns, c
}

// stop cancels the candidate and waits for Run to return.
func (c *candidate) stop() {
	c.cancel()
	<-c.done
}

func await(t *testing.T, what string, ch <-chan struct{}) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(patience):
		t.Fatalf("timed out waiting for %s", what)
	}
}

func getLease(t *testing.T, client kubecore.LeasesGetter, ns string) *coordinationv1.Lease {
	t.Helper()
	l, err := client.Leases(ns).Get(t.Context(), "lease", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func holder(l *coordinationv1.Lease) string {
	if l.Spec.HolderIdentity == nil {
		return "<nil>"
	}
	return *l.Spec.HolderIdentity
}

func transitions(l *coordinationv1.Lease) int32 {
	if l.Spec.LeaseTransitions == nil {
		return -1
	}
	return *l.Spec.LeaseTransitions
}

func ptr[T any](v T) *T { return &v }

// A candidate takes a Lease whose holder stopped renewing it, but only
// once the lease duration passed since it saw the Lease last change, and
// counts the transition; when it stops it releases the Lease.
func TestTakeoverAfterHolderStopsRenewing(t *testing.T) {
	client := kubecoretest.New(t, env.Config)
	ns := env.CreateNamespace(t, "election")
	now := metav1.NowMicro()
	_, err := client.Leases(ns).Create(t.Context(), &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: "lease"},
		Spec: coordinationv1.LeaseSpec{
			HolderIdentity: ptr("gone"), LeaseDurationSeconds: ptr(int32(leaseDuration / time.Second)),
			AcquireTime: &now, RenewTime: &now, LeaseTransitions: ptr(int32(3)),
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	begun := time.Now()
	c := run(t, client, ns, "next")
	await(t, "the candidate to take the silent holder's lease", c.started)
	if waited := time.Since(begun); waited < leaseDuration {
		t.Errorf("took the lease after %s, before the lease duration %s passed", waited, leaseDuration)
	}
	if !c.IsLeader() || c.Check(0) != nil {
		t.Errorf("IsLeader()=%v Check()=%v, want true and nil", c.IsLeader(), c.Check(0))
	}
	l := getLease(t, client, ns)
	if diff := cmp.Diff([]any{"next", int32(3 + 1)}, []any{holder(l), transitions(l)}); diff != "" {
		t.Errorf("lease holder and transitions (-want +got):\n%s", diff)
	}

	c.stop()
	await(t, "StoppedLeading", c.stopped)
	if c.term.Err() == nil {
		t.Error("the leading term's context is still live after Run returned")
	}
	l = getLease(t, client, ns)
	if diff := cmp.Diff([]any{"", int32(4)}, []any{holder(l), transitions(l)}); diff != "" {
		t.Errorf("released lease holder and transitions (-want +got):\n%s", diff)
	}
}

// lateRenewal is a Lease client through which the holder's own renewal,
// cancelled in flight, lands on the apiserver just after the release read
// the Lease: after the first Get that succeeds once the term ended, it
// renews the Lease as the holder.
type lateRenewal struct {
	kubecore.LeasesGetter
	t      *testing.T
	ended  func() bool
	landed atomic.Bool
}

func (l *lateRenewal) Leases(ns string) kubecore.LeaseInterface {
	return lateRenewalLeases{l.LeasesGetter.Leases(ns), l}
}

type lateRenewalLeases struct {
	kubecore.LeaseInterface
	l *lateRenewal
}

func (r lateRenewalLeases) Get(ctx context.Context, name string, opts metav1.GetOptions) (*coordinationv1.Lease, error) {
	lease, err := r.LeaseInterface.Get(ctx, name, opts)
	if err != nil || !r.l.ended() || r.l.landed.Swap(true) {
		return lease, err // the client's own error, passed through
	}
	renewed := lease.DeepCopy()
	now := metav1.NowMicro()
	renewed.Spec.RenewTime = &now
	if _, err := r.Update(context.Background(), renewed, metav1.UpdateOptions{}); err != nil {
		r.l.t.Errorf("the late renewal: %v", err)
	}
	return lease, nil
}

// A renewal cancelled in flight that lands after the release read the
// Lease makes the release's write conflict; the release reads the Lease
// again and still frees it.
func TestReleaseOutlastsALateRenewal(t *testing.T) {
	ns := env.CreateNamespace(t, "election")
	var running atomic.Pointer[candidate]
	client := &lateRenewal{LeasesGetter: kubecoretest.New(t, env.Config), t: t, ended: func() bool {
		c := running.Load()
		if c == nil {
			return false
		}
		select {
		case <-c.started:
			return c.term.Err() != nil
		default:
			return false
		}
	}}
	c := run(t, client, ns, "holder")
	running.Store(c)
	await(t, "the candidate to create and take the lease", c.started)
	c.stop()
	await(t, "StoppedLeading", c.stopped)
	if !client.landed.Load() {
		t.Fatal("the late renewal never landed: the release did not read the Lease")
	}
	l := getLease(t, client, ns)
	if diff := cmp.Diff([]any{"", int32(0)}, []any{holder(l), transitions(l)}); diff != "" {
		t.Errorf("released lease holder and transitions (-want +got):\n%s", diff)
	}
}

// A leader whose Lease another writer took steps down within the renew
// deadline: its term ends, Run returns, and it does not write over the
// other holder.
func TestLeaderStepsDownWhenAnotherWriterTakesTheLease(t *testing.T) {
	client, ns, c := leader(t, "leader")
	l := getLease(t, client, ns)
	if diff := cmp.Diff([]any{"leader", int32(0)}, []any{holder(l), transitions(l)}); diff != "" {
		t.Errorf("new lease holder and transitions (-want +got):\n%s", diff)
	}

	// The intruder writes over the Lease, retrying on the leader's
	// renewals, as a candidate with another view of time would.
	for {
		l = getLease(t, client, ns)
		now := metav1.NowMicro()
		l.Spec.HolderIdentity, l.Spec.AcquireTime, l.Spec.RenewTime = ptr("intruder"), &now, &now
		if _, err := client.Leases(ns).Update(t.Context(), l, metav1.UpdateOptions{}); err == nil {
			break
		}
	}
	await(t, "the leader to step down", c.done)
	await(t, "StoppedLeading", c.stopped)
	if c.term.Err() == nil {
		t.Error("the leading term's context is still live after the leader stepped down")
	}
	if c.IsLeader() {
		t.Error("IsLeader() is true after the leader stepped down")
	}
	if got := holder(getLease(t, client, ns)); got != "intruder" {
		t.Errorf("holder after stepping down = %q, want the intruder's (no release over it)", got)
	}
}

// Of two candidates one leads; when it stops and releases the Lease, the
// other takes it without waiting out the lease duration.
func TestOneLeaderAndReleaseHandsOver(t *testing.T) {
	client, ns, a := leader(t, "a")
	contending := time.Now()
	b := run(t, client, ns, "b")
	// Let b contend for a while: until a renewed the lease twice after b
	// began (b tries as often as a renews).
	testwait.Within(t, "a to renew its lease twice", patience, func() bool {
		return getLease(t, client, ns).Spec.RenewTime.After(contending.Add(2 * retryPeriod))
	})
	select {
	case <-b.started:
		t.Fatal("b leads while a holds the lease")
	default:
	}
	stopped := time.Now()
	a.stop()
	await(t, "b to take over", b.started)
	if took := time.Since(stopped); took >= leaseDuration {
		t.Errorf("b took over after %s; a released lease should not wait out the duration %s", took, leaseDuration)
	}
	if got := holder(getLease(t, client, ns)); got != "b" {
		t.Errorf("holder = %q, want b", got)
	}
}

func TestValidate(t *testing.T) {
	valid := func() *election.Elector {
		return &election.Elector{
			Client: kubecoretest.New(t, env.Config), Name: "lease", Identity: "me",
			LeaseDuration: leaseDuration, RenewDeadline: renewDeadline, RetryPeriod: retryPeriod,
			Leader: noLeader{},
		}
	}
	tests := []struct {
		name    string
		edit    func(*election.Elector)
		wantErr bool
	}{
		{name: "valid", edit: func(*election.Elector) {}},
		{name: "deadline not below duration", edit: func(e *election.Elector) { e.RenewDeadline = e.LeaseDuration }, wantErr: true},
		{name: "retry too close to deadline", edit: func(e *election.Elector) { e.RetryPeriod = e.RenewDeadline }, wantErr: true},
		{name: "no retry period", edit: func(e *election.Elector) { e.RetryPeriod = 0 }, wantErr: true},
		{name: "no identity", edit: func(e *election.Elector) { e.Identity = "" }, wantErr: true},
		{name: "no Leader", edit: func(e *election.Elector) { e.Leader = nil }, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := valid()
			tt.edit(e)
			if err := e.Validate(); (err != nil) != tt.wantErr {
				t.Errorf("Validate() = %v, wantErr %v", err, tt.wantErr)
			}
		})
	}
}

// noLeader is a Leader that does nothing.
type noLeader struct{}

func (noLeader) StartedLeading(context.Context) {}

func (noLeader) StoppedLeading() {}
