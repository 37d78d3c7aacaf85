package outbox_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/crowsnest-dev/crowsnest/config"
	"github.com/crowsnest-dev/crowsnest/internal/testenv"
	"github.com/crowsnest-dev/crowsnest/internal/testnotify"
	"github.com/crowsnest-dev/crowsnest/internal/testwait"
	"github.com/crowsnest-dev/crowsnest/notify"
	"github.com/crowsnest-dev/crowsnest/notify/outbox"
	"github.com/crowsnest-dev/crowsnest/notify/services/slack"
	"github.com/crowsnest-dev/crowsnest/notify/services/svc"
	"github.com/crowsnest-dev/crowsnest/notify/services/webhook"
)

// flakyWebhook is a webhook endpoint failing its first failures requests
// with 502; it counts the requests it accepted.
type flakyWebhook struct {
	*httptest.Server
	failures  atomic.Int32
	requests  atomic.Int32
	delivered atomic.Int32
	bodies    sync.Map
}

func newFlakyWebhook(t *testing.T, failures int32) *flakyWebhook {
	t.Helper()
	f := &flakyWebhook{}
	f.failures.Store(failures)
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.requests.Add(1)
		if f.failures.Add(-1) >= 0 {
			http.Error(w, "upstream down", http.StatusBadGateway)
			return
		}
		f.delivered.Add(1)
		buf := make([]byte, 256)
		n, _ := r.Body.Read(buf)
		v, _ := f.bodies.LoadOrStore(string(buf[:n]), new(atomic.Int32))
		v.(*atomic.Int32).Add(1)
	}))
	t.Cleanup(f.Close)
	return f
}

func webhookService(t *testing.T, name, url string) *webhook.Sender {
	t.Helper()
	wh, err := webhook.New(name, &config.WebhookService{URL: url, Timeout: config.Duration{Duration: 5 * time.Second}}, svc.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return wh
}

func hookDelivery(key, app, body string) outbox.Delivery {
	return outbox.Delivery{Key: key, App: app, Trigger: "on-deployed", Service: "webhook.hook",
		Notification: notify.Notification{Webhook: map[string]notify.WebhookTemplate{"hook": {Body: body}}}}
}

func TestOutboxRetriesThenDeliversOnce(t *testing.T) {
	hook := newFlakyWebhook(t, 3)
	reg := prometheus.NewRegistry()
	o := fastOutbox(&outbox.MemoryStore{}, map[string]notify.Service{"webhook.hook": webhookService(t, "hook", hook.URL)}, outbox.NewMetrics(reg))
	runOutbox(t, o)
	rec, created, err := o.Enqueue(t.Context(), hookDelivery("k1", "argocd/guestbook", `{"n":1}`))
	if err != nil || !created {
		t.Fatalf("Enqueue = %v, %v", created, err)
	}
	got := waitState(t, o, rec.ID, outbox.StateDelivered)
	if got.Attempts != 4 || hook.requests.Load() != 4 || hook.delivered.Load() != 1 {
		t.Errorf("attempts %d, requests %d, delivered %d; want 4, 4, 1", got.Attempts, hook.requests.Load(), hook.delivered.Load())
	}
	labels := map[string]string{"service": "webhook.hook"}
	// Metrics follow the durable state: wait for the last one.
	testwait.For(t, "the delivered metric", func() bool {
		return metric(t, reg, "crowsnest_notify_deliveries_total", map[string]string{"service": "webhook.hook", "trigger": "on-deployed", "result": "delivered"}) == 1
	})
	for _, m := range []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"crowsnest_notify_deliveries_total", map[string]string{"service": "webhook.hook", "trigger": "on-deployed", "result": "failed"}, 3},
		{"crowsnest_notify_deliveries_total", map[string]string{"service": "webhook.hook", "trigger": "on-deployed", "result": "delivered"}, 1},
		{"crowsnest_notify_retries_total", labels, 3},
		{"crowsnest_notify_delivery_duration_seconds", labels, 4},
		{"crowsnest_notify_dead_letters_total", labels, 0},
	} {
		if got := metric(t, reg, m.name, m.labels); got != m.want {
			t.Errorf("%s%v = %v, want %v", m.name, m.labels, got, m.want)
		}
	}
	testwait.For(t, "outbox depth 0", func() bool { return metric(t, reg, "crowsnest_notify_outbox_depth", map[string]string{}) == 0 })

	// The same dedupe key again sends nothing.
	again, created, err := o.Enqueue(t.Context(), hookDelivery("k1", "argocd/guestbook", `{"n":1}`))
	if err != nil || created || again.State != outbox.StateDelivered {
		t.Fatalf("second Enqueue = %+v, %v, %v; want the delivered record, not created", again.State, created, err)
	}
	waitSettled(t, o)
	if hook.requests.Load() != 4 {
		t.Errorf("a duplicate key was sent again: %d requests", hook.requests.Load())
	}
}

func TestOutboxDeadLetterAndRedeliver(t *testing.T) {
	hook := newFlakyWebhook(t, 1000)
	reg := prometheus.NewRegistry()
	dead := &deadList{}
	o := fastOutbox(&outbox.MemoryStore{}, map[string]notify.Service{"webhook.hook": webhookService(t, "hook", hook.URL)}, outbox.NewMetrics(reg))
	o.MaxAttempts = 3
	o.DeadLetters = dead
	runOutbox(t, o)
	rec, _, err := o.Enqueue(t.Context(), hookDelivery("k-dead", "argocd/app", "{}"))
	if err != nil {
		t.Fatal(err)
	}
	got := waitState(t, o, rec.ID, outbox.StateDead)
	if got.Attempts != 3 || hook.requests.Load() != 3 {
		t.Errorf("attempts %d, requests %d; want 3, 3", got.Attempts, hook.requests.Load())
	}
	if want := "webhook hook: POST http://127.0.0.1"; len(got.LastError) < len(want) || got.LastError[:len(want)] != want {
		t.Errorf("last error = %q", got.LastError)
	}
	testwait.For(t, "the dead letter heard", func() bool { return len(dead.list()) > 0 })
	if got := dead.list(); len(got) != 1 || got[0].ID != rec.ID {
		t.Errorf("dead letters = %+v, want one for %s", got, rec.ID)
	}
	if n := metric(t, reg, "crowsnest_notify_dead_letters_total", map[string]string{"service": "webhook.hook"}); n != 1 {
		t.Errorf("dead letters metric = %v, want 1", n)
	}
	if n := metric(t, reg, "crowsnest_notify_deliveries_total", map[string]string{"service": "webhook.hook", "trigger": "on-deployed", "result": "dead"}); n != 1 {
		t.Errorf("dead deliveries metric = %v, want 1", n)
	}

	// The destination recovers; redelivery sends it once more.
	hook.failures.Store(0)
	if _, err := o.Redeliver(t.Context(), rec.ID); err != nil {
		t.Fatal(err)
	}
	got = waitState(t, o, rec.ID, outbox.StateDelivered)
	if got.Redeliveries != 1 || got.Attempts != 1 || hook.delivered.Load() != 1 {
		t.Errorf("after redeliver: %+v, delivered %d", got, hook.delivered.Load())
	}
	if _, err := o.Redeliver(t.Context(), "no-such-id"); !errors.Is(err, outbox.ErrNotFound) {
		t.Errorf("Redeliver(unknown) = %v, want ErrNotFound", err)
	}

	log, err := o.Log(t.Context(), "argocd/app")
	if err != nil {
		t.Fatal(err)
	}
	if len(log) != 1 || log[0].ID != rec.ID || log[0].Service != "webhook.hook" || log[0].State != outbox.StateDelivered {
		t.Errorf("log = %+v", log)
	}
	if other, _ := o.Log(t.Context(), "argocd/other"); len(other) != 0 {
		t.Errorf("log of another app = %+v, want empty", other)
	}
}

func TestOutboxPermanentErrorDeadLettersAtOnce(t *testing.T) {
	srv := testnotify.NewRequests(t, http.StatusUnprocessableEntity, "nope")
	o := fastOutbox(&outbox.MemoryStore{}, map[string]notify.Service{"webhook.hook": webhookService(t, "hook", srv.URL)}, nil)
	runOutbox(t, o)
	rec, _, err := o.Enqueue(t.Context(), hookDelivery("k-perm", "a/b", "{}"))
	if err != nil {
		t.Fatal(err)
	}
	if got := waitState(t, o, rec.ID, outbox.StateDead); got.Attempts != 1 {
		t.Errorf("attempts = %d, want 1 for a 422", got.Attempts)
	}
}

// One hanging webhook (app A) must not delay a Slack message for app B.
func TestOutboxHangingDestinationBlocksNothingElse(t *testing.T) {
	release := make(chan struct{})
	var hung atomic.Int32
	hang := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		hung.Add(1)
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(hang.Close)
	t.Cleanup(func() { close(release) })
	slackSrv := testnotify.NewFakeSlack(t)
	sl, err := slack.New("slack", &config.SlackService{Token: config.InlineSecret("xoxb-token"), APIURL: slackSrv.APIURL()}, svc.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sl.Close() })
	reg := prometheus.NewRegistry()
	o := fastOutbox(&outbox.MemoryStore{}, map[string]notify.Service{
		"webhook.hang": webhookService(t, "hang", hang.URL), "slack": sl,
	}, outbox.NewMetrics(reg))
	o.AttemptTimeout = time.Minute
	o.MaxInFlight = 2
	stop := runOutbox(t, o)
	for i := range 3 {
		d := hookDelivery(fmt.Sprintf("hang-%d", i), "argocd/a", "{}")
		d.Service = "webhook.hang"
		d.Notification.Webhook = map[string]notify.WebhookTemplate{"hang": {Body: "{}"}}
		if _, _, err := o.Enqueue(t.Context(), d); err != nil {
			t.Fatal(err)
		}
	}
	testwait.For(t, "the webhook to hang", func() bool { return hung.Load() == 1 })
	start := time.Now()
	rec, _, err := o.Enqueue(t.Context(), outbox.Delivery{Key: "slack-b", App: "argocd/b", Trigger: "on-deployed", Service: "slack", Recipient: "#deploys",
		Notification: notify.Notification{Message: "b deployed"}})
	if err != nil {
		t.Fatal(err)
	}
	waitState(t, o, rec.ID, outbox.StateDelivered)
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("the Slack message took %s behind a hanging webhook", took)
	}
	testwait.For(t, "outbox depth 3 (the hanging webhook's deliveries)", func() bool {
		return metric(t, reg, "crowsnest_notify_outbox_depth", map[string]string{}) == 3
	})
	if hung.Load() != 1 {
		t.Errorf("the hanging destination got %d requests at once, want 1 (in order)", hung.Load())
	}
	// Stopping interrupts the hanging attempt; it stays pending, unspent.
	stop()
	pending, err := o.Store.List(t.Context(), outbox.ListOptions{App: "argocd/a", State: outbox.StatePending})
	if err != nil || len(pending) != 3 || pending[0].Attempts != 0 {
		t.Errorf("after stop: %d pending (%v), first %+v", len(pending), err, pending)
	}
}

func TestOutboxEnqueueBeforeStartAndRestart(t *testing.T) {
	hook := newFlakyWebhook(t, 0)
	store := &outbox.MemoryStore{}
	svcs := map[string]notify.Service{"webhook.hook": webhookService(t, "hook", hook.URL)}
	first := fastOutbox(store, svcs, nil)
	stop := runOutbox(t, first)
	done, _, err := first.Enqueue(t.Context(), hookDelivery("done", "a/b", "done"))
	if err != nil {
		t.Fatal(err)
	}
	waitState(t, first, done.ID, outbox.StateDelivered)
	stop()
	// Recorded while nothing runs: kept pending for the next Start.
	for _, k := range []string{"p1", "p2"} {
		if _, _, err := first.Enqueue(t.Context(), hookDelivery(k, "a/b", k)); err != nil {
			t.Fatal(err)
		}
	}
	second := fastOutbox(store, svcs, nil)
	runOutbox(t, second)
	testwait.For(t, "both pending deliveries", func() bool { return hook.delivered.Load() == 3 })
	waitSettled(t, second) // Start handed over all it found at once
	got := map[string]int32{}
	hook.bodies.Range(func(k, v any) bool { got[k.(string)] = v.(*atomic.Int32).Load(); return true })
	if diff := cmp.Diff(map[string]int32{"done": 1, "p1": 1, "p2": 1}, got); diff != "" {
		t.Errorf("deliveries per body (-want +got):\n%s", diff)
	}
}

func TestOutboxRateLimit(t *testing.T) {
	hook := newFlakyWebhook(t, 0)
	o := fastOutbox(&outbox.MemoryStore{}, map[string]notify.Service{"webhook.hook": webhookService(t, "hook", hook.URL)}, nil)
	o.RateLimits = map[string]outbox.RateLimit{"webhook.hook": {PerSecond: 20, Burst: 1}}
	runOutbox(t, o)
	start := time.Now()
	for i := range 5 {
		d := hookDelivery(fmt.Sprintf("r%d", i), "a/b", "{}")
		d.Recipient = fmt.Sprint(i) // distinct destinations: only the service limit paces them
		if _, _, err := o.Enqueue(t.Context(), d); err != nil {
			t.Fatal(err)
		}
	}
	testwait.For(t, "five deliveries", func() bool { return hook.delivered.Load() == 5 })
	if took := time.Since(start); took < 180*time.Millisecond {
		t.Errorf("5 sends at 20/s with burst 1 took %s, want at least 200ms", took)
	}
}

// A service says its own pace (config's rateLimit, through WithRateLimit)
// unless the outbox's RateLimits name it.
func TestOutboxPacesAsTheServiceSays(t *testing.T) {
	hook := newFlakyWebhook(t, 0)
	o := fastOutbox(&outbox.MemoryStore{}, map[string]notify.Service{
		"webhook.hook": outbox.WithRateLimit(webhookService(t, "hook", hook.URL), outbox.RateLimit{PerSecond: 20, Burst: 1}),
	}, nil)
	o.RateLimits = nil
	runOutbox(t, o)
	start := time.Now()
	for i := range 5 {
		if _, _, err := o.Enqueue(t.Context(), hookDelivery(fmt.Sprintf("p%d", i), fmt.Sprint("a/", i), "{}")); err != nil {
			t.Fatal(err)
		}
	}
	testwait.For(t, "five deliveries", func() bool { return hook.delivered.Load() == 5 })
	if took := time.Since(start); took < 180*time.Millisecond {
		t.Errorf("5 sends at 20/s with burst 1 took %s, want at least 200ms", took)
	}
}

func TestOutboxEnqueueValidation(t *testing.T) {
	o := &outbox.Outbox{Store: &outbox.MemoryStore{}}
	if _, _, err := o.Enqueue(t.Context(), outbox.Delivery{Service: "slack"}); err == nil {
		t.Error("Enqueue without a key: want an error")
	}
	if got, want := outbox.DeliveryID("a"), outbox.DeliveryID("a"); got != want || len(got) != 32 || got == outbox.DeliveryID("b") {
		t.Errorf("DeliveryID not deterministic and distinct: %q %q", got, want)
	}
}

func TestOutboxUnknownServiceAndNoSecretsInLogs(t *testing.T) {
	hook := newFlakyWebhook(t, 1000)
	var buf testenv.LogBuffer
	wh, err := webhook.New("hook", &config.WebhookService{URL: hook.URL + "/hooks/T000/secret-path-part", Bearer: config.InlineSecret("bearer-value-123"), HMACSecret: config.InlineSecret("hmac-value-456")}, svc.Options{})
	if err != nil {
		t.Fatal(err)
	}
	o := fastOutbox(&outbox.MemoryStore{}, map[string]notify.Service{"webhook.hook": wh}, nil)
	o.MaxAttempts = 2
	o.Logger = slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	runOutbox(t, o)
	a, _, err := o.Enqueue(t.Context(), hookDelivery("secret", "a/b", "{}"))
	if err != nil {
		t.Fatal(err)
	}
	d := hookDelivery("unknown", "a/b", "{}")
	d.Service = "webhook.nope"
	b, _, err := o.Enqueue(t.Context(), d)
	if err != nil {
		t.Fatal(err)
	}
	rec := waitState(t, o, a.ID, outbox.StateDead)
	if unknown := waitState(t, o, b.ID, outbox.StateDead); unknown.LastError != `no service "webhook.nope" configured` || unknown.Attempts != 2 {
		t.Errorf("unknown service record = %+v", unknown)
	}
	testwait.For(t, "two dead-letter log lines", func() bool { return strings.Count(buf.String(), "notification dead-lettered") == 2 })
	logs := buf.String()
	for _, secret := range []string{"secret-path-part", "bearer-value-123", "hmac-value-456"} {
		if strings.Contains(logs, secret) || strings.Contains(rec.LastError, secret) {
			t.Errorf("%q leaked into logs or the record:\n%s\n%s", secret, logs, rec.LastError)
		}
	}
}

func TestMemoryStoreKeepsNewestFinishedPerApp(t *testing.T) {
	s := &outbox.MemoryStore{Keep: 1}
	t0 := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	for i, app := range []string{"a/x", "a/x", "a/x", "a/y"} {
		r := record(fmt.Sprint("m", i), app, t0.Add(time.Duration(i)*time.Second))
		if _, err := s.Create(t.Context(), r); err != nil {
			t.Fatal(err)
		}
		if i == 2 {
			continue // stays pending
		}
		r.State, r.DoneAt = outbox.StateDelivered, t0.Add(time.Minute+time.Duration(i)*time.Second)
		if err := s.Update(t.Context(), r); err != nil {
			t.Fatal(err)
		}
	}
	all, err := s.List(t.Context(), outbox.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, r := range all {
		keys = append(keys, r.Key)
	}
	if diff := cmp.Diff([]string{"m1", "m2", "m3"}, keys); diff != "" {
		t.Errorf("kept (-want +got):\n%s", diff)
	}
}

// hookedStore is a MemoryStore whose List and Update let a test hold the
// outbox at the moments where a rescan could send a delivery twice.
type hookedStore struct {
	*outbox.MemoryStore
	lists atomic.Int32
	mu    sync.Mutex
	// afterList, when set, runs once after a List read the records and
	// before it returns them.
	afterList func()
	// aroundUpdate, when set, runs instead of each Update; write performs it.
	aroundUpdate func(rec outbox.Record, write func() error) error
}

func (s *hookedStore) List(ctx context.Context, opts outbox.ListOptions) ([]outbox.Record, error) {
	recs, err := s.MemoryStore.List(ctx, opts)
	s.mu.Lock()
	h := s.afterList
	s.afterList = nil
	s.mu.Unlock()
	if h != nil {
		h()
	}
	s.lists.Add(1)
	return recs, err
}

func (s *hookedStore) Update(ctx context.Context, rec outbox.Record) error {
	s.mu.Lock()
	h := s.aroundUpdate
	s.mu.Unlock()
	if h == nil {
		return s.MemoryStore.Update(ctx, rec)
	}
	return h(rec, func() error { return s.MemoryStore.Update(ctx, rec) })
}

// waitRescans waits until the outbox listed the store n more times.
func waitRescans(t *testing.T, s *hookedStore, n int32) {
	t.Helper()
	from := s.lists.Load()
	testwait.For(t, fmt.Sprintf("%d rescans", n), func() bool { return s.lists.Load() >= from+n })
}

// gate is a channel closed once, by the test or at its end, so a held
// goroutine never outlives the test.
func gate(t *testing.T) (wait <-chan struct{}, open func()) {
	t.Helper()
	ch := make(chan struct{})
	var once sync.Once
	open = func() { once.Do(func() { close(ch) }) }
	t.Cleanup(open)
	return ch, open
}

func receive(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(10 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
	}
}

// A record another process marks pending is picked up by the running
// outbox at its next rescan and sent once.
func TestOutboxRescanPicksUpRedeliveryFromAnotherOutbox(t *testing.T) {
	hook := newFlakyWebhook(t, 0)
	store := &outbox.MemoryStore{}
	o := fastOutbox(store, map[string]notify.Service{"webhook.hook": webhookService(t, "hook", hook.URL)}, nil)
	o.RescanInterval = 10 * time.Millisecond
	runOutbox(t, o)
	rec, _, err := o.Enqueue(t.Context(), hookDelivery("again", "a/b", "again"))
	if err != nil {
		t.Fatal(err)
	}
	waitState(t, o, rec.ID, outbox.StateDelivered)

	cli := &outbox.Outbox{Store: store} // not started, like the CLI's
	marked, err := cli.Redeliver(t.Context(), rec.ID)
	if err != nil || marked.State != outbox.StatePending || marked.Redeliveries != 1 {
		t.Fatalf("Redeliver = %+v, %v; want pending with 1 redelivery", marked, err)
	}
	testwait.For(t, "the redelivery", func() bool { return hook.delivered.Load() == 2 })
	got := waitState(t, o, rec.ID, outbox.StateDelivered)
	waitRescanSettled(t, o)
	if hook.delivered.Load() != 2 || got.Attempts != 1 || got.Redeliveries != 1 {
		t.Errorf("delivered %d times, record %+v; want 2 deliveries, 1 attempt, 1 redelivery", hook.delivered.Load(), got)
	}
}

// While the final state of a sent delivery is being saved, the store
// still says pending: rescans meanwhile must not send it again.
func TestOutboxRescanSkipsDeliveryBeingSaved(t *testing.T) {
	hook := newFlakyWebhook(t, 0)
	store := &hookedStore{MemoryStore: &outbox.MemoryStore{}}
	saving, startedSaving := gate(t)
	release, releaseSave := gate(t)
	store.aroundUpdate = func(rec outbox.Record, write func() error) error {
		if rec.Terminal() {
			startedSaving()
			<-release
		}
		return write()
	}
	o := fastOutbox(store, map[string]notify.Service{"webhook.hook": webhookService(t, "hook", hook.URL)}, nil)
	o.RescanInterval = 5 * time.Millisecond
	runOutbox(t, o)
	rec, _, err := o.Enqueue(t.Context(), hookDelivery("saving", "a/b", "saving"))
	if err != nil {
		t.Fatal(err)
	}
	receive(t, saving, "the final save")
	waitRescans(t, store, 3)
	releaseSave()
	waitState(t, o, rec.ID, outbox.StateDelivered)
	waitRescans(t, store, 3)
	if n := hook.delivered.Load(); n != 1 {
		t.Errorf("delivered %d times, want 1", n)
	}
}

// A rescan that read the store before a delivery's final save must not
// send it again when its list comes back.
func TestOutboxRescanSkipsDeliverySettledDuringList(t *testing.T) {
	var requests atomic.Int32
	sending, sent := gate(t)
	srv := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		select {
		case <-sending:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(srv.Close)
	store := &hookedStore{MemoryStore: &outbox.MemoryStore{}}
	reg := prometheus.NewRegistry()
	o := fastOutbox(store, map[string]notify.Service{"webhook.hook": webhookService(t, "hook", srv.URL)}, outbox.NewMetrics(reg))
	o.RescanInterval = 5 * time.Millisecond
	runOutbox(t, o)
	rec, _, err := o.Enqueue(t.Context(), hookDelivery("settling", "a/b", "settling"))
	if err != nil {
		t.Fatal(err)
	}
	testwait.For(t, "the request to arrive", func() bool { return requests.Load() == 1 })

	listed, hasListed := gate(t)
	resume, resumeList := gate(t)
	store.mu.Lock()
	store.afterList = func() { hasListed(); <-resume }
	store.mu.Unlock()
	receive(t, listed, "a rescan to read the store")
	sent() // the delivery completes and settles while the list is out
	waitState(t, o, rec.ID, outbox.StateDelivered)
	testwait.For(t, "outbox depth 0", func() bool { return metric(t, reg, "crowsnest_notify_outbox_depth", map[string]string{}) == 0 })
	resumeList()
	waitRescans(t, store, 3)
	if n := requests.Load(); n != 1 {
		t.Errorf("sent %d times, want 1", n)
	}
}

// A redelivery asked for between a delivery's final save and its settling
// is queued once it settles, not dropped.
func TestOutboxRedeliverWhileSettling(t *testing.T) {
	hook := newFlakyWebhook(t, 0)
	store := &hookedStore{MemoryStore: &outbox.MemoryStore{}}
	saved, hasSaved := gate(t)
	release, releaseSave := gate(t)
	var first atomic.Bool
	store.aroundUpdate = func(rec outbox.Record, write func() error) error {
		err := write()
		if rec.Terminal() && first.CompareAndSwap(false, true) {
			hasSaved()
			<-release
		}
		return err
	}
	o := fastOutbox(store, map[string]notify.Service{"webhook.hook": webhookService(t, "hook", hook.URL)}, nil)
	o.RescanInterval = -1 // only the in-process path can deliver it
	runOutbox(t, o)
	rec, _, err := o.Enqueue(t.Context(), hookDelivery("twice", "a/b", "twice"))
	if err != nil {
		t.Fatal(err)
	}
	receive(t, saved, "the final save")
	if _, err := o.Redeliver(t.Context(), rec.ID); err != nil {
		t.Fatal(err)
	}
	releaseSave()
	testwait.For(t, "the redelivery", func() bool { return hook.delivered.Load() == 2 })
	got := waitState(t, o, rec.ID, outbox.StateDelivered)
	waitSettled(t, o)
	if hook.delivered.Load() != 2 || got.Redeliveries != 1 {
		t.Errorf("delivered %d times, record %+v; want 2 and 1 redelivery", hook.delivered.Load(), got)
	}
}

func TestOutboxRedeliverRefusesPending(t *testing.T) {
	store := &outbox.MemoryStore{}
	o := &outbox.Outbox{Store: store} // never started: the delivery stays pending
	rec, _, err := o.Enqueue(t.Context(), hookDelivery("p", "a/b", "{}"))
	if err != nil {
		t.Fatal(err)
	}
	got, err := o.Redeliver(t.Context(), rec.ID)
	if !errors.Is(err, outbox.ErrPending) || got.ID != rec.ID || got.State != outbox.StatePending {
		t.Errorf("Redeliver(pending) = %+v, %v; want the pending record and ErrPending", got, err)
	}
	if after, _ := store.Get(t.Context(), rec.ID); after.Redeliveries != 0 {
		t.Errorf("a refused redelivery was counted: %+v", after)
	}
}

func TestOutboxFind(t *testing.T) {
	store := &outbox.MemoryStore{}
	ids := []string{
		"abcd1111111111111111111111111111",
		"abcd2222222222222222222222222222",
		"ef01333333333333333333333333333f",
	}
	for _, id := range ids {
		r := record(id, "a/b", time.Now())
		r.ID = id
		if _, err := store.Create(t.Context(), r); err != nil {
			t.Fatal(err)
		}
	}
	o := &outbox.Outbox{Store: store}
	tests := []struct {
		name    string
		in      string
		want    string
		wantErr error
		errHas  []string
	}{
		{name: "full ID", in: ids[0], want: ids[0]},
		{name: "unique prefix", in: "abcd2", want: ids[1]},
		{name: "upper case and spaces", in: " EF01 ", want: ids[2]},
		{name: "ambiguous", in: "abcd", wantErr: outbox.ErrAmbiguousID, errHas: ids[:2]},
		{name: "unknown prefix", in: "ffff", wantErr: outbox.ErrNotFound},
		{name: "unknown full ID", in: "ffff0000000000000000000000000000", wantErr: outbox.ErrNotFound},
		{name: "too short", in: "abc", errHas: []string{`"abc"`, "4 to 32 hexadecimal digits"}},
		{name: "not hex", in: "abcz", errHas: []string{`"abcz"`, "hexadecimal"}},
		{name: "too long", in: ids[0] + "0", errHas: []string{"4 to 32"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := o.Find(t.Context(), tt.in)
			if tt.want != "" {
				if err != nil || got.ID != tt.want {
					t.Fatalf("Find(%q) = %s, %v; want %s", tt.in, got.ID, err, tt.want)
				}
				return
			}
			if err == nil {
				t.Fatalf("Find(%q) = %s; want an error", tt.in, got.ID)
			}
			if tt.wantErr != nil && !errors.Is(err, tt.wantErr) {
				t.Errorf("Find(%q) = %v; want %v", tt.in, err, tt.wantErr)
			}
			for _, s := range tt.errHas {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("Find(%q) error %q lacks %q", tt.in, err, s)
				}
			}
		})
	}
}

// Messages about one Application reach a destination in order, one at a
// time; another Application's messages to the same destination do not
// wait behind them.
func TestOutboxOrdersPerApplicationNotPerDestination(t *testing.T) {
	release := make(chan struct{})
	var mu sync.Mutex
	var got []string
	var aInFlight atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		got = append(got, string(b))
		mu.Unlock()
		if strings.HasPrefix(string(b), "a") {
			if aInFlight.Add(1) > 1 {
				t.Errorf("two messages about argocd/a in flight at once")
			}
			defer aInFlight.Add(-1)
			if string(b) == "a0" {
				select {
				case <-release:
				case <-r.Context().Done():
				}
			}
		}
	}))
	t.Cleanup(srv.Close)
	o := fastOutbox(&outbox.MemoryStore{}, map[string]notify.Service{"webhook.hook": webhookService(t, "hook", srv.URL)}, nil)
	o.AttemptTimeout = time.Minute
	runOutbox(t, o)
	enqueue := func(key, app string) outbox.Record {
		t.Helper()
		rec, _, err := o.Enqueue(t.Context(), hookDelivery(key, app, key))
		if err != nil {
			t.Fatal(err)
		}
		return rec
	}
	enqueue("a0", "argocd/a")
	a1 := enqueue("a1", "argocd/a")
	testwait.For(t, "a0 to be held by the destination", func() bool { return aInFlight.Load() == 1 })
	b0 := enqueue("b0", "argocd/b")
	waitState(t, o, b0.ID, outbox.StateDelivered)
	if rec, err := o.Store.Get(t.Context(), a1.ID); err != nil || rec.State != outbox.StatePending {
		t.Errorf("a1 = %+v, %v; want pending behind a0", rec, err)
	}
	close(release)
	waitState(t, o, a1.ID, outbox.StateDelivered)
	mu.Lock()
	defer mu.Unlock()
	if want := []string{"a0", "b0", "a1"}; !slices.Equal(got, want) {
		t.Errorf("arrival order = %v, want %v", got, want)
	}
}

// deadList keeps the deliveries an Outbox gave up on.
type deadList struct {
	mu   sync.Mutex
	recs []outbox.Record
}

func (d *deadList) DeadLettered(r outbox.Record) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.recs = append(d.recs, r)
}

func (d *deadList) list() []outbox.Record {
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.Clone(d.recs)
}
