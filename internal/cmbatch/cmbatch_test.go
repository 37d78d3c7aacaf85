package cmbatch_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"

	"github.com/crowsnest-dev/crowsnest/internal/cmbatch"
	"github.com/crowsnest-dev/crowsnest/internal/kubecore"
)

// countingClient is a clientset whose requests are counted by method.
type countingClient struct {
	kubecore.Interface
	mu     sync.Mutex
	counts map[string]int
}

func (c *countingClient) count(method string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.counts[method]
}

type countingTransport struct {
	next http.RoundTripper
	c    *countingClient
}

func (t countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	t.c.mu.Lock()
	t.c.counts[r.Method]++
	t.c.mu.Unlock()
	return t.next.RoundTrip(r)
}

func newClient(t *testing.T) *countingClient {
	t.Helper()
	if env == nil {
		t.Fatal("no control plane (TestMain did not start one)")
	}
	c := &countingClient{counts: map[string]int{}}
	c.Interface = wrappedClient(t, func(rt http.RoundTripper) http.RoundTripper { return countingTransport{next: rt, c: c} })
	return c
}

// wrappedClient is a clientset of the control plane, unthrottled, whose
// requests go through wrap's RoundTripper.
func wrappedClient(t *testing.T, wrap func(http.RoundTripper) http.RoundTripper) kubecore.Interface {
	t.Helper()
	cfg := rest.CopyConfig(env.Config)
	cfg.QPS, cfg.Burst = -1, 0
	cfg.Wrap(wrap)
	cs, err := kubecore.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// seeded is a new namespace with the ConfigMap "state" written once.
func seeded(t *testing.T, c kubecore.Interface) string {
	t.Helper()
	ns := env.CreateNamespace(t, "cmbatch")
	if err := (&cmbatch.Writer{Client: c, Namespace: ns, Name: "state"}).Apply(t.Context(), set("k", "v0")); err != nil {
		t.Fatal(err)
	}
	return ns
}

func set(key, val string) cmbatch.Change {
	return func(b *cmbatch.Batch) (bool, error) {
		if b.Data[key] == val {
			return false, nil
		}
		b.Data[key] = val
		return true, nil
	}
}

// A burst of concurrent changes lands whole, in far fewer writes than
// changes, and needs no read after the first.
func TestWriterGroupsConcurrentChanges(t *testing.T) {
	c := newClient(t)
	ns := env.CreateNamespace(t, "cmbatch")
	w := &cmbatch.Writer{Client: c, Namespace: ns, Name: "state", Labels: map[string]string{"app": "crowsnest"}}
	const n = 300
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Go(func() { errs <- w.Apply(t.Context(), set(fmt.Sprint("k", i), fmt.Sprint(i))) })
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("Apply: %v", err)
		}
	}
	cm, err := c.ConfigMaps(ns).Get(t.Context(), "state", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		if got := cm.Data[fmt.Sprint("k", i)]; got != fmt.Sprint(i) {
			t.Errorf("k%d = %q, want %d", i, got, i)
		}
	}
	if cm.Labels["app"] != "crowsnest" {
		t.Errorf("labels = %v, want the Writer's", cm.Labels)
	}
	writes := c.count(http.MethodPost) + c.count(http.MethodPut)
	if writes >= n/2 {
		t.Errorf("%d changes took %d writes; want them grouped into far fewer", n, writes)
	}
	if reads := c.count(http.MethodGet); reads > 2 { // the Get above, and one before the first write
		t.Errorf("%d reads; want only the first write to read", reads)
	}
	t.Logf("%d concurrent changes: %d writes", n, writes)

	// A change that leaves the data alone writes nothing.
	before := c.count(http.MethodPut)
	if err := w.Apply(t.Context(), set("k1", "1")); err != nil {
		t.Fatal(err)
	}
	if got := c.count(http.MethodPut); got != before {
		t.Errorf("a no-op change wrote (%d updates, want %d)", got, before)
	}
}

// Another process's writes are kept: the Writer's stale copy meets a
// conflict, reads again and applies its batch to what the other wrote.
func TestWriterKeepsOtherWritersChanges(t *testing.T) {
	c := newClient(t)
	ns := env.CreateNamespace(t, "cmbatch")
	w := &cmbatch.Writer{Client: c, Namespace: ns, Name: "state"}
	other := &cmbatch.Writer{Client: c, Namespace: ns, Name: "state"}
	ctx := t.Context()
	for i := range 5 {
		if err := w.Apply(ctx, set(fmt.Sprint("mine", i), "x")); err != nil {
			t.Fatal(err)
		}
		if err := other.Apply(ctx, set(fmt.Sprint("theirs", i), "y")); err != nil {
			t.Fatal(err)
		}
	}
	cm, err := c.ConfigMaps(ns).Get(ctx, "state", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(cm.Data) != 10 {
		t.Errorf("data = %v, want 5 keys of each writer", cm.Data)
	}

	// A change that needs what another writer added is decided on the
	// ConfigMap as it is, not on the Writer's older copy.
	if err := other.Apply(ctx, set("theirs-new", "y")); err != nil {
		t.Fatal(err)
	}
	errMissing := errors.New("missing")
	if err := w.Apply(ctx, func(b *cmbatch.Batch) (bool, error) {
		if _, ok := b.Data["theirs-new"]; !ok {
			return false, errMissing
		}
		b.Data["theirs-new"] = "seen"
		return true, nil
	}); err != nil {
		t.Errorf("change needing another writer's key: %v", err)
	}

	// Deleted behind the Writer's back: it creates the ConfigMap again.
	if err := c.ConfigMaps(ns).Delete(ctx, "state", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := w.Apply(ctx, set("after", "z")); err != nil {
		t.Fatalf("Apply after delete: %v", err)
	}
	cm, err = c.ConfigMaps(ns).Get(ctx, "state", metav1.GetOptions{})
	if err != nil || cm.Data["after"] != "z" {
		t.Fatalf("after delete: %v, %v; want the change written again", cm, err)
	}
}

// A failing change fails alone; the batch's others land. Finally runs
// once per key per write, after every change.
func TestWriterChangeErrorsAndFinally(t *testing.T) {
	c := newClient(t)
	ns := env.CreateNamespace(t, "cmbatch")
	w := &cmbatch.Writer{Client: c, Namespace: ns, Name: "state"}
	errFull := errors.New("full")
	var finals atomic.Int32
	const n = 50
	var wg sync.WaitGroup
	results := make([]error, n)
	for i := range n {
		wg.Go(func() {
			results[i] = w.Apply(t.Context(), func(b *cmbatch.Batch) (bool, error) {
				if i%10 == 0 {
					return false, errFull
				}
				b.Data[fmt.Sprint("k", i)] = "v"
				b.Finally("count", func(data map[string]string) {
					finals.Add(1)
					n := 0
					for k := range data {
						if strings.HasPrefix(k, "k") {
							n++
						}
					}
					data["count"] = fmt.Sprint(n)
				})
				return true, nil
			})
		})
	}
	wg.Wait()
	for i, err := range results {
		if want := i%10 == 0; errors.Is(err, errFull) != want || (!want && err != nil) {
			t.Errorf("change %d: err = %v, want errFull %v", i, err, want)
		}
	}
	cm, err := c.ConfigMaps(ns).Get(t.Context(), "state", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	keys := 0
	for k := range cm.Data {
		if strings.HasPrefix(k, "k") {
			keys++
		}
	}
	if keys != n-n/10 {
		t.Errorf("%d keys written, want %d", keys, n-n/10)
	}
	// The last write's Finally saw every key written before it.
	if got, want := cm.Data["count"], fmt.Sprint(keys); got != want {
		t.Errorf("count = %s, want %s (Finally runs after the batch's changes)", got, want)
	}
	if f := int(finals.Load()); f > c.count(http.MethodPost)+c.count(http.MethodPut) {
		t.Errorf("Finally ran %d times for %d writes; want once per write", f, c.count(http.MethodPost)+c.count(http.MethodPut))
	}
}

// A change whose context ended before its write is dropped with that
// error.
func TestWriterDropsCancelledChanges(t *testing.T) {
	c := newClient(t)
	ns := env.CreateNamespace(t, "cmbatch")
	w := &cmbatch.Writer{Client: c, Namespace: ns, Name: "state"}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := w.Apply(ctx, set("k", "v")); !errors.Is(err, context.Canceled) {
		t.Errorf("Apply with a cancelled context = %v, want context.Canceled", err)
	}
	if n := c.count(http.MethodPost) + c.count(http.MethodPut); n != 0 {
		t.Errorf("%d writes for a cancelled change, want 0", n)
	}
}

func TestShardsSpreadKeys(t *testing.T) {
	s := cmbatch.NewShards(nil, "ns", "crowsnest-x", 4, nil)
	seen := map[int]bool{}
	for i := range 100 {
		k := fmt.Sprint("app-", i)
		sh := s.Of(k)
		if sh != s.Of(k) || sh < 0 || sh >= s.Len() {
			t.Fatalf("Of(%q) = %d: not a stable shard in [0,%d)", k, sh, s.Len())
		}
		seen[sh] = true
		if got, want := s.Writer(sh).Name, fmt.Sprintf("crowsnest-x-%d", sh); got != want {
			t.Errorf("shard %d writer name = %s, want %s", sh, got, want)
		}
	}
	if len(seen) != 4 {
		t.Errorf("100 keys went to %d of 4 shards", len(seen))
	}
}

// conflictingTransport changes the ConfigMap behind the Writer's back
// before each of its writes, so the real apiserver answers 409; after the
// first such answer it calls conflicted.
type conflictingTransport struct {
	next       http.RoundTripper
	other      kubecore.Interface
	ns, name   string
	n          *atomic.Int32
	conflicted func()
}

func (t conflictingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Method != http.MethodPut {
		return t.next.RoundTrip(r)
	}
	cms := t.other.ConfigMaps(t.ns)
	cm, err := cms.Get(r.Context(), t.name, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	if cm.Data == nil {
		cm.Data = map[string]string{}
	}
	cm.Data["other"] = fmt.Sprint(t.n.Add(1))
	if _, err := cms.Update(r.Context(), cm, metav1.UpdateOptions{}); err != nil {
		return nil, err
	}
	resp, err := t.next.RoundTrip(r)
	if err == nil && resp.StatusCode == http.StatusConflict {
		t.conflicted()
	}
	return resp, err
}

// A change whose context ends while the Writer waits to retry after a
// conflict is given up at once with the context's error: the wait (an
// hour here) watches the contexts of the changes it holds.
func TestWriterStopsRetryingWhenTheChangeIsCancelled(t *testing.T) {
	c := newClient(t)
	ns := seeded(t, c)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var n atomic.Int32
	cs := wrappedClient(t, func(rt http.RoundTripper) http.RoundTripper {
		return conflictingTransport{next: rt, other: c.Interface, ns: ns, name: "state", n: &n, conflicted: cancel}
	})
	w := &cmbatch.Writer{Client: cs, Namespace: ns, Name: "state",
		Backoff: wait.Backoff{Steps: 5, Duration: time.Hour, Factor: 1}}
	if err := w.Apply(ctx, set("k", "v1")); !errors.Is(err, context.Canceled) {
		t.Errorf("Apply cancelled while waiting to retry = %v, want context.Canceled", err)
	}
	if got := n.Load(); got != 1 {
		t.Errorf("%d writes tried, want 1 (no retry after the cancel)", got)
	}
}

// gatedTransport holds the Writer's first write until open is closed
// (telling held it is held), then makes each later write conflict, as
// conflictingTransport does.
type gatedTransport struct {
	conflictingTransport
	first      *atomic.Bool
	held, open chan struct{}
}

func (t gatedTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Method == http.MethodPut && t.first.CompareAndSwap(false, true) {
		close(t.held)
		<-t.open
		return t.next.RoundTrip(r)
	}
	return t.conflictingTransport.RoundTrip(r)
}

// A change cancelled while its batch waits to retry after a conflict is
// given up at once even though another change of the batch keeps
// waiting: its Apply does not wait for the others' retries.
func TestWriterReleasesACancelledChangeWhileItsBatchRetries(t *testing.T) {
	c := newClient(t)
	ns := seeded(t, c)
	ctxA, cancelA := context.WithCancel(t.Context())
	defer cancelA()
	ctxB, cancelB := context.WithCancel(t.Context())
	defer cancelB()
	var n atomic.Int32
	tr := gatedTransport{
		conflictingTransport: conflictingTransport{other: c.Interface, ns: ns, name: "state", n: &n, conflicted: cancelB},
		first:                new(atomic.Bool), held: make(chan struct{}), open: make(chan struct{}),
	}
	cs := wrappedClient(t, func(rt http.RoundTripper) http.RoundTripper {
		tr.next = rt
		return tr
	})
	w := &cmbatch.Writer{Client: cs, Namespace: ns, Name: "state",
		Backoff: wait.Backoff{Steps: 5, Duration: time.Hour, Factor: 1}}
	apply := func(ctx context.Context, key string) <-chan error {
		done := make(chan error, 1)
		go func() { done <- w.Apply(ctx, set(key, "v1")) }()
		return done
	}
	first := apply(t.Context(), "first")
	<-tr.held
	// A and B queue behind the held write, so they go out together next.
	doneA, doneB := apply(ctxA, "a"), apply(ctxB, "b")
	if err := wait.PollUntilContextTimeout(t.Context(), time.Millisecond, 30*time.Second, true,
		func(context.Context) (bool, error) { return w.Queued() == 2, nil }); err != nil {
		t.Fatalf("the two changes did not queue: %v", err)
	}
	close(tr.open)
	if err := <-first; err != nil {
		t.Fatalf("the held write: %v", err)
	}
	select {
	case err := <-doneB:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("Apply cancelled while its batch waits to retry = %v, want context.Canceled", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Apply of a cancelled change waited for its batch's retry")
	}
	select {
	case err := <-doneA:
		t.Fatalf("Apply of the change still wanted returned during the hour-long wait: %v", err)
	default:
	}
	cancelA()
	if err := <-doneA; !errors.Is(err, context.Canceled) {
		t.Errorf("Apply cancelled afterwards = %v, want context.Canceled", err)
	}
	if got := n.Load(); got != 1 {
		t.Errorf("%d conflicting writes, want 1 (no retry after the cancels)", got)
	}
}
