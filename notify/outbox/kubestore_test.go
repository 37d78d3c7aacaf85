package outbox_test

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/crowsnest-dev/crowsnest/internal/kubecore"
	"github.com/crowsnest-dev/crowsnest/internal/testnotify"
	"github.com/crowsnest-dev/crowsnest/internal/testwait"
	"github.com/crowsnest-dev/crowsnest/notify"
	"github.com/crowsnest-dev/crowsnest/notify/outbox"
)

func kubeStore(t *testing.T) (*outbox.ConfigMapStore, kubecore.Interface) {
	t.Helper()
	if env == nil {
		t.Fatal("no control plane (TestMain did not start one)")
	}
	cs, err := kubecore.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	return &outbox.ConfigMapStore{Client: cs, Namespace: env.CreateNamespace(t, "notify"), Shards: 2, Keep: 2}, cs
}

// runHookOutboxOnKube runs an outbox over a one-shard ConfigMapStore that
// sends to a webhook sink, without rescans.
func runHookOutboxOnKube(t *testing.T) (*outbox.ConfigMapStore, kubecore.Interface, *flakyWebhook, *outbox.Outbox) {
	t.Helper()
	s, cs := kubeStore(t)
	s.Shards = 1
	hook := newFlakyWebhook(t, 0)
	o := fastOutbox(s, map[string]notify.Service{"webhook.hook": webhookService(t, "hook", hook.URL)}, nil)
	o.RescanInterval = -1 // what a test writes into the store stays there
	runOutbox(t, o)
	return s, cs, hook, o
}

func record(key, app string, created time.Time) outbox.Record {
	return outbox.Record{Delivery: outbox.Delivery{ID: outbox.DeliveryID(key), Key: key, App: app, Service: "slack", Recipient: "#c",
		Notification: notify.Notification{Message: key}}, State: outbox.StatePending, CreatedAt: created, UpdatedAt: created}
}

func TestConfigMapStore(t *testing.T) {
	s, cs := kubeStore(t)
	ctx := t.Context()
	t0 := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	for i := range 5 {
		created, err := s.Create(ctx, record(fmt.Sprint("k", i), "argocd/a", t0.Add(time.Duration(i)*time.Second)))
		if err != nil || !created {
			t.Fatalf("Create k%d = %v, %v", i, created, err)
		}
	}
	if created, err := s.Create(ctx, record("k0", "argocd/a", t0)); err != nil || created {
		t.Fatalf("second Create k0 = %v, %v; want not created", created, err)
	}
	if _, err := s.Create(ctx, record("other", "argocd/b", t0)); err != nil {
		t.Fatal(err)
	}
	if err := s.Update(ctx, record("missing", "argocd/a", t0)); !errors.Is(err, outbox.ErrNotFound) {
		t.Errorf("Update of a missing record = %v, want ErrNotFound", err)
	}
	// Finish four of a's five: only the newest Keep=2 finished stay; the
	// pending one is never trimmed.
	for i := range 4 {
		r := record(fmt.Sprint("k", i), "argocd/a", t0.Add(time.Duration(i)*time.Second))
		r.State, r.DoneAt, r.Attempts = outbox.StateDelivered, t0.Add(time.Minute+time.Duration(i)*time.Second), 1
		if err := s.Update(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	got, err := s.List(ctx, outbox.ListOptions{App: "argocd/a"})
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, r := range got {
		keys = append(keys, r.Key+"="+string(r.State))
	}
	if diff := cmp.Diff([]string{"k2=delivered", "k3=delivered", "k4=pending"}, keys); diff != "" {
		t.Errorf("records of argocd/a (-want +got):\n%s", diff)
	}
	pending, err := s.List(ctx, outbox.ListOptions{State: outbox.StatePending})
	if err != nil || len(pending) != 2 {
		t.Errorf("pending = %d records (%v), want 2", len(pending), err)
	}
	if r, err := s.Get(ctx, outbox.DeliveryID("other")); err != nil || r.App != "argocd/b" || r.Notification.Message != "other" {
		t.Errorf("Get(other) = %+v, %v", r, err)
	}
	if _, err := s.Get(ctx, outbox.DeliveryID("k0")); !errors.Is(err, outbox.ErrNotFound) {
		t.Errorf("Get(trimmed k0) = %v, want ErrNotFound", err)
	}

	if err := s.SetThread(ctx, "slack-abc", "C1|1700000000.000001"); err != nil {
		t.Fatal(err)
	}
	if ref, err := s.Thread(ctx, "slack-abc"); err != nil || ref != "C1|1700000000.000001" {
		t.Errorf("Thread = %q, %v", ref, err)
	}
	if ref, err := s.Thread(ctx, "slack-none"); err != nil || ref != "" {
		t.Errorf("Thread(unknown) = %q, %v", ref, err)
	}
	cms, err := cs.ConfigMaps(s.Namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, cm := range cms.Items {
		if cm.Name != "kube-root-ca.crt" && !strings.HasPrefix(cm.Name, "crowsnest-outbox-") {
			t.Errorf("unexpected ConfigMap %s", cm.Name)
		}
	}
}

// A shard's finished records are held to LogBytes, oldest dropped first
// whatever their app; pending records are never dropped.
func TestConfigMapStoreBoundsTheLogBySize(t *testing.T) {
	s, cs := kubeStore(t)
	s.Shards, s.Keep, s.LogBytes = 1, 100, 4<<10
	ctx := t.Context()
	t0 := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	const n = 40
	for i := range n {
		r := record(fmt.Sprint("r", i), fmt.Sprint("argocd/app", i%7), t0)
		if _, err := s.Create(ctx, r); err != nil {
			t.Fatal(err)
		}
		if i%10 == 9 {
			continue // left pending
		}
		r.State, r.DoneAt = outbox.StateDelivered, t0.Add(time.Duration(i)*time.Second)
		if err := s.Update(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	cm, err := cs.ConfigMaps(s.Namespace).Get(ctx, "crowsnest-outbox-0", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	all, err := s.List(ctx, outbox.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	doneBytes, pending, oldestKept := 0, 0, n
	for _, r := range all {
		if r.State == outbox.StatePending {
			pending++
			continue
		}
		k := "d." + r.ID
		doneBytes += len(k) + len(cm.Data[k])
		var i int
		_, _ = fmt.Sscanf(r.Key, "r%d", &i)
		oldestKept = min(oldestKept, i)
	}
	if pending != n/10 {
		t.Errorf("%d pending records kept, want all %d", pending, n/10)
	}
	if doneBytes > s.LogBytes || doneBytes < s.LogBytes/2 {
		t.Errorf("finished records take %d bytes, want at most LogBytes (%d) and not far below", doneBytes, s.LogBytes)
	}
	// Every finished record newer than the oldest kept is still there.
	for i := oldestKept; i < n; i++ {
		if _, err := s.Get(ctx, outbox.DeliveryID(fmt.Sprint("r", i))); err != nil {
			t.Errorf("r%d (newer than the oldest kept, r%d): %v", i, oldestKept, err)
		}
	}
	if oldestKept == 0 {
		t.Errorf("nothing was dropped")
	}
}

// Writers racing on one shard all land: updates are guarded by
// resourceVersion and retried on conflict.
func TestConfigMapStoreConcurrentWriters(t *testing.T) {
	s, _ := kubeStore(t)
	s.Shards = 1
	var wg sync.WaitGroup
	errs := make(chan error, 12)
	for w := range 3 {
		wg.Go(func() {
			other := &outbox.ConfigMapStore{Client: s.Client, Namespace: s.Namespace, Shards: 1}
			for i := range 4 {
				if _, err := other.Create(t.Context(), record(fmt.Sprintf("w%d-%d", w, i), fmt.Sprintf("ns/app%d", w), time.Now())); err != nil {
					errs <- err
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	all, err := s.List(t.Context(), outbox.ListOptions{})
	if err != nil || len(all) != 12 {
		t.Errorf("List = %d records (%v), want 12", len(all), err)
	}
}

// A restarted outbox on the same ConfigMaps delivers pending deliveries
// exactly once, does not redeliver completed ones, and keeps Slack
// threads.
func TestOutboxRestartOnConfigMapStore(t *testing.T) {
	store, _ := kubeStore(t)
	f := testnotify.NewFakeSlack(t)
	hook := newFlakyWebhook(t, 0)
	services := func() map[string]notify.Service {
		return map[string]notify.Service{
			"slack":        f.Service(t, store),
			"webhook.hook": webhookService(t, "hook", hook.URL),
		}
	}
	slackMsg := func(key, text string) outbox.Delivery {
		return outbox.Delivery{Key: key, App: "argocd/guestbook", Trigger: "on-deployed", Service: "slack", Recipient: "#deploys",
			Notification: notify.Notification{Message: text, Slack: &notify.SlackTemplate{GroupingKey: "guestbook"}}}
	}

	first := fastOutbox(store, services(), nil)
	stop := runOutbox(t, first)
	r1, _, err := first.Enqueue(t.Context(), slackMsg("s1", "started"))
	if err != nil {
		t.Fatal(err)
	}
	h1, _, err := first.Enqueue(t.Context(), hookDelivery("h1", "argocd/guestbook", "h1"))
	if err != nil {
		t.Fatal(err)
	}
	waitState(t, first, r1.ID, outbox.StateDelivered)
	waitState(t, first, h1.ID, outbox.StateDelivered)
	stop()

	// Recorded while crowsnest is down (as if it crashed after recording).
	for _, d := range []outbox.Delivery{slackMsg("s2", "succeeded"), hookDelivery("h2", "argocd/guestbook", "h2")} {
		if _, _, err := first.Enqueue(t.Context(), d); err != nil {
			t.Fatal(err)
		}
	}

	second := fastOutbox(store, services(), nil)
	runOutbox(t, second)
	waitState(t, second, outbox.DeliveryID("s2"), outbox.StateDelivered)
	waitState(t, second, outbox.DeliveryID("h2"), outbox.StateDelivered)
	waitSettled(t, second) // Start handed over all it found at once

	type call struct{ Text, ThreadTS string }
	var got []call
	for _, c := range f.Calls() {
		if c.Method == "chat.postMessage" {
			got = append(got, call{c.Form.Get("text"), c.Form.Get("thread_ts")})
		}
	}
	if diff := cmp.Diff([]call{{"started", ""}, {"succeeded", "1700000000.000001"}}, got); diff != "" {
		t.Errorf("Slack messages (-want +got):\n%s", diff)
	}
	if hook.delivered.Load() != 2 {
		t.Errorf("webhook got %d deliveries, want 2 (h1 once, h2 once)", hook.delivered.Load())
	}
	log, err := second.Log(t.Context(), "argocd/guestbook")
	if err != nil {
		t.Fatal(err)
	}
	if len(log) != 2 { // Keep=2: the two newest finished entries
		t.Errorf("log has %d entries, want 2", len(log))
	}
}

// hookRecorder is a webhook endpoint that counts requests per body, takes
// a while to answer (so rescans run while a delivery is in flight) and
// refuses the bodies in refuse with 422.
type hookRecorder struct {
	*httptest.Server
	mu       sync.Mutex
	accepted map[string]int
	refused  map[string]int
	refuse   map[string]bool
}

func newHookRecorder(t *testing.T, delay time.Duration) *hookRecorder {
	t.Helper()
	h := &hookRecorder{accepted: map[string]int{}, refused: map[string]int{}, refuse: map[string]bool{}}
	h.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(io.LimitReader(r.Body, 1<<10))
		time.Sleep(delay) // sleep-ok: the destination's answer takes this long
		h.mu.Lock()
		defer h.mu.Unlock()
		if h.refuse[string(b)] {
			h.refused[string(b)]++
			http.Error(w, "no", http.StatusUnprocessableEntity)
			return
		}
		h.accepted[string(b)]++
	}))
	t.Cleanup(h.Close)
	return h
}

func (h *hookRecorder) counts() (accepted, refused map[string]int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return maps.Clone(h.accepted), maps.Clone(h.refused)
}

// `crowsnest notify redeliver` is a second process with its own store on
// the same ConfigMaps: what it marks pending, the running outbox delivers
// exactly once, a delivered message and a dead-lettered one alike, even
// with rescans running while the redelivery is in flight.
func TestOutboxDeliversRedeliveryMarkedByAnotherProcess(t *testing.T) {
	store, _ := kubeStore(t)
	hook := newHookRecorder(t, 150*time.Millisecond)
	hook.refuse["dead"] = true
	daemon := fastOutbox(store, map[string]notify.Service{"webhook.hook": webhookService(t, "hook", hook.URL)}, nil)
	daemon.RescanInterval = 20 * time.Millisecond
	runOutbox(t, daemon)
	ok, _, err := daemon.Enqueue(t.Context(), hookDelivery("ok", "argocd/a", "ok"))
	if err != nil {
		t.Fatal(err)
	}
	dead, _, err := daemon.Enqueue(t.Context(), hookDelivery("dead", "argocd/b", "dead"))
	if err != nil {
		t.Fatal(err)
	}
	waitState(t, daemon, ok.ID, outbox.StateDelivered)
	waitState(t, daemon, dead.ID, outbox.StateDead)

	hook.mu.Lock()
	hook.refuse["dead"] = false // the destination was fixed
	hook.mu.Unlock()
	cli := &outbox.Outbox{Store: &outbox.ConfigMapStore{Client: store.Client, Namespace: store.Namespace, Shards: store.Shards, Keep: store.Keep}}
	for _, id := range []string{ok.ID, dead.ID} {
		found, err := cli.Find(t.Context(), id[:8])
		if err != nil || found.ID != id {
			t.Fatalf("Find(%s) = %s, %v", id[:8], found.ID, err)
		}
		if _, err := cli.Redeliver(t.Context(), id); err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range []string{ok.ID, dead.ID} {
		testwait.For(t, "delivery "+id+" to be redelivered", func() bool {
			r, err := store.Get(t.Context(), id)
			return err == nil && r.State == outbox.StateDelivered && r.Redeliveries == 1
		})
	}
	waitRescanSettled(t, daemon)
	accepted, refused := hook.counts()
	if diff := cmp.Diff(map[string]int{"ok": 2, "dead": 1}, accepted); diff != "" {
		t.Errorf("accepted requests per body (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]int{"dead": 1}, refused); diff != "" {
		t.Errorf("refused requests per body (-want +got):\n%s", diff)
	}
	if r, err := cli.Redeliver(t.Context(), "ffff0000000000000000000000000000"); !errors.Is(err, outbox.ErrNotFound) {
		t.Errorf("Redeliver(unknown) = %+v, %v; want ErrNotFound", r, err)
	}
}

func TestConfigMapStoreModify(t *testing.T) {
	s, _ := kubeStore(t)
	ctx := t.Context()
	r := record("m", "argocd/m", time.Now())
	if _, err := s.Create(ctx, r); err != nil {
		t.Fatal(err)
	}
	got, err := s.Modify(ctx, r.ID, func(rec *outbox.Record) error { rec.Redeliveries = 7; return nil })
	if err != nil || got.Redeliveries != 7 {
		t.Fatalf("Modify = %+v, %v", got, err)
	}
	if stored, _ := s.Get(ctx, r.ID); stored.Redeliveries != 7 {
		t.Errorf("stored after Modify = %+v", stored)
	}
	refuse := errors.New("refused")
	got, err = s.Modify(ctx, r.ID, func(rec *outbox.Record) error { rec.Redeliveries = 9; return refuse })
	if !errors.Is(err, refuse) || got.Redeliveries != 7 {
		t.Errorf("Modify refused by fn = %+v, %v; want the record as read and fn's error", got, err)
	}
	if _, err := s.Modify(ctx, r.ID, func(rec *outbox.Record) error { rec.App = "argocd/other"; return nil }); !errors.Is(err, outbox.ErrChangedIdentity) {
		t.Errorf("Modify moving the app = %v, want ErrChangedIdentity", err)
	}
	if _, err := s.Modify(ctx, "ffff0000000000000000000000000000", func(*outbox.Record) error { return nil }); !errors.Is(err, outbox.ErrNotFound) {
		t.Errorf("Modify(unknown) = %v, want ErrNotFound", err)
	}
	if stored, _ := s.Get(ctx, r.ID); stored.Redeliveries != 7 || stored.App != "argocd/m" {
		t.Errorf("a refused Modify changed the record: %+v", stored)
	}
}

// Absent is sure only about a shard this store wrote: before that it
// cannot tell; after, it sees records created, and those compaction moved
// into the log.
func TestConfigMapStoreAbsent(t *testing.T) {
	s, _ := kubeStore(t)
	s.Shards = 1
	ctx := t.Context()
	t0 := time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)
	a := record("a", "argocd/web", t0)
	if s.Absent(a.ID, a.App) {
		t.Fatal("Absent before the store read anything: want false (it cannot tell)")
	}
	if _, err := s.Create(ctx, a); err != nil {
		t.Fatal(err)
	}
	if s.Absent(a.ID, a.App) {
		t.Error("Absent(a) after creating it")
	}
	if b := record("b", "argocd/web", t0); !s.Absent(b.ID, b.App) {
		t.Error("Absent(b) = false; b was never created")
	}
	a.State, a.DoneAt = outbox.StateDelivered, t0.Add(time.Second)
	if err := s.Update(ctx, a); err != nil {
		t.Fatal(err)
	}
	if err := s.Compact(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(ctx, a.ID); err != nil {
		t.Fatal(err)
	}
	if s.Absent(a.ID, a.App) {
		t.Error("Absent(a) after compaction moved it into the log")
	}
	// A second store over the same ConfigMaps (the next process) cannot
	// tell until it writes.
	next := &outbox.ConfigMapStore{Client: s.Client, Namespace: s.Namespace, Shards: 1}
	if c := record("c", "argocd/web", t0); next.Absent(c.ID, c.App) {
		t.Error("a new store is sure before reading anything")
	}
}

// A full outbox shard makes no message go out that cannot be recorded:
// while a record does not fit, Enqueue fails and nothing is sent, however
// often the notifier retries; once there is room, it is sent once.
func TestOutboxOnAFullConfigMapShardSendsNothingTwice(t *testing.T) {
	s, _, hook, o := runHookOutboxOnKube(t)
	ctx := t.Context()
	warm, _, err := o.Enqueue(ctx, hookDelivery("warm-up", "argocd/warm-up", `{}`))
	if err != nil {
		t.Fatal(err)
	}
	waitState(t, o, warm.ID, outbox.StateDelivered)
	// Pending records fill the shard until not even a small one fits.
	var fillers []outbox.Record
	for size := 100 << 10; size >= 16; {
		r := record(fmt.Sprint("filler", len(fillers)), "argocd/filler", time.Now())
		r.Notification.Message = strings.Repeat("x", size)
		if _, err := s.Create(ctx, r); errors.Is(err, outbox.ErrStoreFull) {
			size /= 2
			continue
		} else if err != nil {
			t.Fatal(err)
		}
		fillers = append(fillers, r)
	}
	d := hookDelivery("k1", "argocd/web", `{"n":1}`)
	for range 3 { // the notifier retrying
		if _, _, err := o.Enqueue(ctx, d); !errors.Is(err, outbox.ErrStoreFull) {
			t.Fatalf("Enqueue into a full shard = %v, want ErrStoreFull", err)
		}
		// An early send is handed to a worker within Enqueue, and held
		// until its state is saved, which a full shard refuses: nothing
		// held now means nothing was or will be sent.
		if n := o.Depth(); n != 0 {
			t.Fatalf("%d deliveries held after an Enqueue into a full shard, want none", n)
		}
	}
	if n := hook.delivered.Load(); n != 1 {
		t.Fatalf("%d messages while the shard was full, want 1 (the warm-up's)", n)
	}
	for _, r := range fillers {
		r.State, r.DoneAt = outbox.StateDelivered, time.Now()
		if err := s.Update(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Compact(ctx); err != nil {
		t.Fatal(err)
	}
	rec, created, err := o.Enqueue(ctx, d)
	if err != nil || !created {
		t.Fatalf("Enqueue once there is room = %v, %v", created, err)
	}
	waitState(t, o, rec.ID, outbox.StateDelivered)
	if n := hook.delivered.Load(); n != 2 {
		t.Errorf("%d messages, want 2 (the warm-up's and this one, once)", n)
	}
}

// A key whose record the store's index knows but that is gone from the
// ConfigMaps (the log deleted by hand, say) was used: Enqueue reports it
// as not created, once, instead of an error the notifier would retry
// forever, holding back every later message of the Application.
func TestOutboxEnqueueOfAKeyWhoseRecordIsGone(t *testing.T) {
	s, cs, hook, o := runHookOutboxOnKube(t)
	ctx := t.Context()
	d := hookDelivery("k1", "argocd/web", `{"n":1}`)
	rec, created, err := o.Enqueue(ctx, d)
	if err != nil || !created {
		t.Fatalf("Enqueue = %v, %v", created, err)
	}
	waitState(t, o, rec.ID, outbox.StateDelivered)
	if err := s.Compact(ctx); err != nil {
		t.Fatal(err)
	}
	if err := cs.ConfigMaps(s.Namespace).Delete(ctx, outbox.DefaultConfigMapPrefix+"-log-0", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(ctx, rec.ID); !errors.Is(err, outbox.ErrNotFound) {
		t.Fatalf("Get after the log was deleted = %v, want ErrNotFound", err)
	}
	if _, created, err := o.Enqueue(ctx, d); err != nil || created {
		t.Fatalf("Enqueue of the used key = created %v, %v; want not created, no error", created, err)
	}
	waitSettled(t, o)
	if n := hook.delivered.Load(); n != 1 {
		t.Errorf("%d messages, want 1", n)
	}
}
