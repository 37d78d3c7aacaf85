package election

import (
	"context"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// tryAcquireOrRenew makes one attempt to take or renew the Lease and
// reports whether this candidate holds it after.
func (e *Elector) tryAcquireOrRenew(ctx context.Context) bool {
	now := metav1.NowMicro()
	want := coordinationv1.LeaseSpec{
		HolderIdentity:       ptr(e.Identity),
		LeaseDurationSeconds: ptr(int32(e.LeaseDuration / time.Second)),
		AcquireTime:          &now,
		RenewTime:            &now,
	}
	// The leader first writes over the Lease as it last wrote it: one
	// request per renewal while nobody else writes.
	if e.leading() && e.valid(now.Time) {
		want.AcquireTime, want.LeaseTransitions = e.observed.AcquireTime, e.observed.LeaseTransitions
		if e.update(ctx, want) == nil {
			return true
		}
	}
	lease, err := e.Client.Leases(e.Namespace).Get(ctx, e.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		want.LeaseTransitions = ptr(int32(0))
		return e.create(ctx, want)
	}
	if err != nil {
		e.Log.Error("error retrieving resource lock", "lease", e.describe(), "error", err)
		return false
	}
	e.lease = lease
	if !equality.Semantic.DeepEqual(lease.Spec, e.observed) {
		e.observe(&lease.Spec, now.Time)
	}
	held := lease.Spec.HolderIdentity != nil && *lease.Spec.HolderIdentity != ""
	if held && e.valid(now.Time) && !e.leading() {
		return false
	}
	transitions := int32(0)
	if lease.Spec.LeaseTransitions != nil {
		transitions = *lease.Spec.LeaseTransitions
	}
	if e.leading() {
		want.AcquireTime = lease.Spec.AcquireTime
	} else {
		transitions++
	}
	want.LeaseTransitions = &transitions
	if err := e.update(ctx, want); err != nil {
		e.Log.Error("failed to update lease", "lease", e.describe(), "error", err)
		return false
	}
	return true
}

// valid reports whether the Lease as observed has not expired at
// now: its holder renewed it (changed it) within its duration.
func (e *Elector) valid(now time.Time) bool {
	d := int32(0)
	if e.observed.LeaseDurationSeconds != nil {
		d = *e.observed.LeaseDurationSeconds
	}
	return e.observedAt.Add(time.Duration(d) * time.Second).After(now)
}

// create creates the Lease with spec.
func (e *Elector) create(ctx context.Context, spec coordinationv1.LeaseSpec) bool {
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: e.Namespace, Name: e.Name}, Spec: spec}
	created, err := e.Client.Leases(e.Namespace).Create(ctx, lease, metav1.CreateOptions{})
	if err != nil {
		e.Log.Error("error initially creating lease", "lease", e.describe(), "error", err)
		return false
	}
	e.lease = created
	e.observe(&spec, time.Now())
	return true
}

// update writes spec over the Lease as last seen; it fails when
// anyone else wrote since.
func (e *Elector) update(ctx context.Context, spec coordinationv1.LeaseSpec) error {
	if e.lease == nil {
		return errLeaseNotRead
	}
	next := e.lease.DeepCopy()
	next.Spec = spec
	updated, err := e.Client.Leases(e.Namespace).Update(ctx, next, metav1.UpdateOptions{})
	if err != nil {
		return err // logged by the callers with the Lease's name
	}
	e.lease = updated
	e.observe(&spec, time.Now())
	return nil
}

// release frees the Lease if this candidate holds it: no holder, a
// duration of one second, so that any other takes it at its next try.
// A renewal cancelled in flight may still land after release read the
// Lease; the write then conflicts, and release reads the Lease again.
func (e *Elector) release() {
	ctx, cancel := context.WithTimeout(context.Background(), e.RenewDeadline)
	defer cancel()
	for {
		lease, err := e.Client.Leases(e.Namespace).Get(ctx, e.Name, metav1.GetOptions{})
		if err != nil {
			e.Log.Error("failed to get lease to release it", "lease", e.describe(), "error", err)
			return
		}
		e.lease = lease
		if !e.leading() || lease.Spec.HolderIdentity == nil || *lease.Spec.HolderIdentity != e.Identity {
			return // another took it since this one last looked: not ours to free
		}
		now := metav1.NowMicro()
		spec := coordinationv1.LeaseSpec{
			HolderIdentity:       ptr(""),
			LeaseDurationSeconds: ptr(int32(1)),
			AcquireTime:          &now,
			RenewTime:            &now,
			LeaseTransitions:     lease.Spec.LeaseTransitions,
		}
		err = e.update(ctx, spec)
		if err == nil {
			return
		}
		if !apierrors.IsConflict(err) {
			e.Log.Error("failed to release lease", "lease", e.describe(), "error", err)
			return
		}
		e.Log.Info("lease changed while releasing it; reading it again", "lease", e.describe())
	}
}

func ptr[T any](v T) *T { return &v }
