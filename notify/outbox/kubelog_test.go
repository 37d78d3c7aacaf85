package outbox_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/crowsnest-dev/crowsnest/internal/kubecore"
	"github.com/crowsnest-dev/crowsnest/internal/testwait"
	"github.com/crowsnest-dev/crowsnest/notify/outbox"
)

// recordStates returns the "key=state" of the records in a ConfigMap.
func recordStates(t *testing.T, cs kubecore.Interface, ns, name string) []string {
	t.Helper()
	cm, err := cs.ConfigMaps(ns).Get(t.Context(), name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		t.Fatalf("reading %s: %v", name, err)
	}
	var out []string
	for k, v := range cm.Data {
		if !strings.HasPrefix(k, "d.") {
			continue
		}
		var r struct{ Key, State string }
		if err := json.Unmarshal([]byte(v), &r); err != nil {
			t.Fatalf("%s: %s: %v", name, k, err)
		}
		out = append(out, r.Key+"="+r.State)
	}
	slices.Sort(out)
	return out
}

// Compaction moves finished records into the log, where each app keeps
// its newest Keep; the shard keeps the pending ones. A compacted record
// is still found, listed, deduplicated (also by a store that starts
// afresh) and redeliverable.
func TestConfigMapStoreCompactsIntoTheLog(t *testing.T) {
	s, cs := kubeStore(t)
	s.Shards, s.Keep = 1, 3
	ctx := t.Context()
	t0 := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	for i := range 6 {
		r := record(fmt.Sprint("a", i), "argocd/a", t0)
		if _, err := s.Create(ctx, r); err != nil {
			t.Fatal(err)
		}
		if i == 5 {
			continue
		}
		r.State, r.DoneAt = outbox.StateDelivered, t0.Add(time.Duration(i)*time.Second)
		if err := s.Update(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Compact(ctx); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"a5=pending"}, recordStates(t, cs, s.Namespace, "crowsnest-outbox-0")); diff != "" {
		t.Errorf("shard after compaction (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"a2=delivered", "a3=delivered", "a4=delivered"}, recordStates(t, cs, s.Namespace, "crowsnest-outbox-log-0")); diff != "" {
		t.Errorf("log after compaction (-want +got):\n%s", diff)
	}
	var keys []string
	all, err := s.List(ctx, outbox.ListOptions{App: "argocd/a"})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range all {
		keys = append(keys, r.Key+"="+string(r.State))
	}
	slices.Sort(keys)
	if diff := cmp.Diff([]string{"a2=delivered", "a3=delivered", "a4=delivered", "a5=pending"}, keys); diff != "" {
		t.Errorf("List (-want +got):\n%s", diff)
	}
	if r, err := s.Get(ctx, outbox.DeliveryID("a3")); err != nil || r.State != outbox.StateDelivered {
		t.Errorf("Get(a3) = %+v, %v; want it from the log", r, err)
	}
	// Enqueuing a compacted key again is a no-op, also for a store that
	// starts afresh (a restart).
	fresh := &outbox.ConfigMapStore{Client: s.Client, Namespace: s.Namespace, Shards: 1, Keep: 3}
	for _, st := range []*outbox.ConfigMapStore{s, fresh} {
		if created, err := st.Create(ctx, record("a4", "argocd/a", t0)); err != nil || created {
			t.Errorf("Create of a compacted key = %v, %v; want not created", created, err)
		}
	}
	// Redelivering a record of the log makes it pending in the shard.
	rec, err := (&outbox.Outbox{Store: fresh}).Redeliver(ctx, outbox.DeliveryID("a3"))
	if err != nil || rec.State != outbox.StatePending {
		t.Fatalf("Redeliver(a3) = %+v, %v", rec, err)
	}
	pending, err := s.List(ctx, outbox.ListOptions{State: outbox.StatePending})
	if err != nil {
		t.Fatal(err)
	}
	keys = nil
	for _, r := range pending {
		keys = append(keys, r.Key)
	}
	slices.Sort(keys)
	if diff := cmp.Diff([]string{"a3", "a5"}, keys); diff != "" {
		t.Errorf("pending after redeliver (-want +got):\n%s", diff)
	}
	// Delivered again, it replaces the log's copy at the next compaction.
	rec.State, rec.DoneAt = outbox.StateDelivered, t0.Add(time.Hour)
	if err := s.Update(ctx, rec); err != nil {
		t.Fatal(err)
	}
	if err := s.Compact(ctx); err != nil {
		t.Fatal(err)
	}
	got, err := s.Get(ctx, rec.ID)
	if err != nil || got.Redeliveries != 1 || !got.DoneAt.Equal(rec.DoneAt) {
		t.Errorf("a3 after redelivery and compaction = %+v, %v", got, err)
	}
	if diff := cmp.Diff([]string{"a5=pending"}, recordStates(t, cs, s.Namespace, "crowsnest-outbox-0")); diff != "" {
		t.Errorf("shard after the second compaction (-want +got):\n%s", diff)
	}
}

// The running outbox compacts its store after deliveries settle.
func TestOutboxCompactsItsStore(t *testing.T) {
	s, cs, hook, o := runHookOutboxOnKube(t)
	for i := range 10 {
		if _, _, err := o.Enqueue(t.Context(), hookDelivery(fmt.Sprint("c", i), fmt.Sprint("argocd/app", i), "{}")); err != nil {
			t.Fatal(err)
		}
	}
	testwait.For(t, "ten deliveries compacted into the log", func() bool {
		return len(recordStates(t, cs, s.Namespace, "crowsnest-outbox-log-0")) == 10
	})
	testwait.For(t, "the shard emptied of finished records", func() bool {
		return len(recordStates(t, cs, s.Namespace, "crowsnest-outbox-0")) == 0
	})
	if n := hook.delivered.Load(); n != 10 {
		t.Errorf("%d deliveries, want 10", n)
	}
}
