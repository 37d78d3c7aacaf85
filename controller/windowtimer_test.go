package controller_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/crowsnest-dev/crowsnest/config"
	"github.com/crowsnest-dev/crowsnest/controller"
	"github.com/crowsnest-dev/crowsnest/internal/testwait"
	"github.com/crowsnest-dev/crowsnest/registry"
	"github.com/crowsnest-dev/crowsnest/triggers"
	"github.com/crowsnest-dev/crowsnest/watcher"
	"github.com/crowsnest-dev/crowsnest/windows"
	"github.com/crowsnest-dev/crowsnest/writeback/kube"
)

func compileWindow(t *testing.T, name string, sw config.SyncWindow) *windows.Window {
	t.Helper()
	w, err := windows.Compile(name, sw)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func setStatus(t *testing.T, ns, name string, status map[string]any) {
	t.Helper()
	u, err := apps(t).Namespace(ns).Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	u.Object["status"] = status
	if _, err := apps(t).Namespace(ns).Update(t.Context(), u, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// With an injected clock 1.5 s before a minute boundary at which an allow
// window with syncOnOpen opens and a deny window closes: the timer wakes at
// the boundary (no polling), requests a sync for the OutOfSync Application
// only (not the synced one, not the one already syncing), and enqueues the
// Applications the closing deny window held.
func TestWindowTimerAtBoundaries(t *testing.T) {
	ns := env.CreateNamespace(t, "windows")
	for _, name := range []string{"drift", "steady", "busy"} {
		createApp(t, ns, name)
	}
	setStatus(t, ns, "drift", map[string]any{"sync": map[string]any{"status": "OutOfSync"}})
	setStatus(t, ns, "steady", map[string]any{"sync": map[string]any{"status": "Synced"}})
	setStatus(t, ns, "busy", map[string]any{"sync": map[string]any{"status": "OutOfSync"},
		"operationState": map[string]any{"phase": "Running", "startedAt": "2026-11-22T10:00:00Z",
			"operation": map[string]any{"sync": map[string]any{}}}})

	rec := &recorder{}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	engine := &controller.Engine{
		Sources:    []controller.Source{&watcher.KubeSource{Client: dynClient(t), Namespaces: []string{ns}, Log: log}},
		Reconciler: rec,
		Log:        log,
	}
	runEngine(t, engine)
	testwait.For(t, "the engine to see the statuses", func() bool {
		for _, n := range []string{"drift", "steady", "busy"} {
			if a := engine.App(ns + "/" + n); a == nil || a.SyncStatus == "" {
				return false
			}
		}
		return true
	})

	// The clock: 1.5 s before boundary B, a whole minute in the future.
	start := time.Now()
	boundary := start.UTC().Truncate(time.Minute).Add(2 * time.Minute)
	offset := boundary.Add(-1500 * time.Millisecond).Sub(start)
	now := func() time.Time { return time.Now().Add(offset) }
	before := boundary.Add(-time.Hour)
	set := windows.Set{
		compileWindow(t, "nightly", config.SyncWindow{Kind: "allow", Schedule: fmt.Sprintf("%d %d * * *", boundary.Minute(), boundary.Hour()),
			Duration: config.Duration{Duration: time.Hour}, Applications: []string{"*"}, SyncOnOpen: true}),
		compileWindow(t, "freeze", config.SyncWindow{Kind: "deny", Schedule: fmt.Sprintf("%d %d * * *", before.Minute(), before.Hour()),
			Duration: config.Duration{Duration: time.Hour}, Applications: []string{"steady"}}),
	}
	if set[0].Active(now()) || !set[1].Active(now()) {
		t.Fatal("test setup: want the allow window closed and the deny window open before the boundary")
	}

	type change struct {
		window string
		opened bool
	}
	var (
		mu      sync.Mutex
		changes []change
		at      []time.Time
	)
	reg := prometheus.NewRegistry()
	// Every Application the windows match hears of each change; the
	// first to hear stands for the window.
	seen := map[string]bool{}
	notified := notifierFunc(func(_ *watcher.App, ev triggers.Event) {
		mu.Lock()
		defer mu.Unlock()
		if seen[ev.Window] {
			return
		}
		seen[ev.Window] = true
		changes = append(changes, change{ev.Window, ev.Type == triggers.EventSyncWindowOpened})
		at = append(at, now())
	})
	timer := &controller.WindowTimer{
		Windows:  fixedWindows(set),
		Engine:   engine,
		Apps:     dynClient(t),
		Notifier: notified,
		Metrics:  controller.NewWindowMetrics(reg),
		Log:      log,
		Now:      now,
	}
	steadyBefore := rec.count(ns + "/steady")
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- timer.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("timer returned %v", err)
		}
	})

	operation := func(name string) map[string]any {
		u, err := apps(t).Namespace(ns).Get(t.Context(), name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		op, _, _ := unstructured.NestedMap(u.Object, "operation")
		return op
	}
	testwait.For(t, "a sync requested for drift", func() bool { return operation("drift") != nil })
	op := operation("drift")
	if user, _, _ := unstructured.NestedString(op, "initiatedBy", "username"); user != "crowsnest" {
		t.Errorf("operation.initiatedBy.username = %q, want crowsnest", user)
	}
	if auto, _, _ := unstructured.NestedBool(op, "initiatedBy", "automated"); !auto {
		t.Error("operation.initiatedBy.automated is not true")
	}
	testwait.For(t, "the closing freeze to enqueue steady", func() bool { return rec.count(ns+"/steady") > steadyBefore })
	for _, n := range []string{"steady", "busy"} {
		if op := operation(n); op != nil {
			t.Errorf("%s got an operation %v; want it left alone", n, op)
		}
	}
	mu.Lock()
	got := append([]change(nil), changes...)
	firedAt := append([]time.Time(nil), at...)
	mu.Unlock()
	if len(got) != 2 {
		t.Fatalf("window changes = %+v, want nightly opened and freeze closed", got)
	}
	for i, c := range got {
		if want := (c.window == "nightly") == c.opened; !want {
			t.Errorf("change %+v: want nightly opened, freeze closed", c)
		}
		if late := firedAt[i].Sub(boundary); late < 0 || late > time.Second {
			t.Errorf("%s changed %v after the boundary, want within 1s", c.window, late)
		}
	}
	if n := counter(t, reg, "crowsnest_window_syncs_requested_total", nil); n != 1 {
		t.Errorf("syncs requested = %v, want 1", n)
	}
	if n := counter(t, reg, "crowsnest_sync_windows_active", nil); n != 1 {
		t.Errorf("active windows = %v, want 1", n)
	}
}

// countingWriter records when the Application was really patched.
type countingWriter struct {
	w   controller.ImageWriter
	now func() time.Time
	mu  sync.Mutex
	at  []time.Time
}

func (c *countingWriter) ApplyFrom(ctx context.Context, ns, name string, cached *unstructured.Unstructured, o []kube.Override) (kube.Result, error) {
	res, err := c.w.ApplyFrom(ctx, ns, name, cached, o)
	if err == nil && res.Patched {
		c.mu.Lock()
		c.at = append(c.at, c.now())
		c.mu.Unlock()
	}
	return res, err
}

// requeueLog is the ImageReconciler as the engine sees it, noting on the
// test's clock when the last reconcile started and ended, when the latest
// requeue a result asked for is due, and how many reconciles run.
type requeueLog struct {
	*controller.ImageReconciler
	now       func() time.Time
	mu        sync.Mutex
	lastStart time.Time
	lastEnd   time.Time
	requeueAt time.Time
	running   int
}

func (l *requeueLog) Reconcile(ctx context.Context, req controller.Request) (controller.Result, error) {
	l.mu.Lock()
	l.lastStart = l.now()
	l.running++
	l.mu.Unlock()
	res, err := l.ImageReconciler.Reconcile(ctx, req)
	l.mu.Lock()
	defer l.mu.Unlock()
	l.running--
	l.lastEnd = l.now()
	if at := l.now().Add(res.RequeueAfter); res.RequeueAfter > 0 && at.After(l.requeueAt) {
		l.requeueAt = at
	}
	return res, err
}

// requeuedAndDone reports whether a reconcile started after the latest
// requeue asked for was due, and none runs: nothing else enqueues the
// Application that late, so that reconcile was the requeue's.
func (l *requeueLog) requeuedAndDone() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return !l.requeueAt.IsZero() && l.lastStart.After(l.requeueAt) && l.running == 0
}

// quietFor reports whether no reconcile ran for d.
func (l *requeueLog) quietFor(d time.Duration) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.running == 0 && !l.lastEnd.IsZero() && l.now().Sub(l.lastEnd) > d
}

func (c *countingWriter) patches() []time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]time.Time(nil), c.at...)
}

// An update found while a deny window holds the Application is pending
// (not written); when the window closes it is written exactly once, within
// a second, with an injected clock.
func TestHeldUpdateWrittenWhenWindowCloses(t *testing.T) {
	_, image := appRegistry(t)

	ns := env.CreateNamespace(t, "held")
	u := createApp(t, ns, "shop")
	u.SetAnnotations(map[string]string{"argocd-image-updater.argoproj.io/image-list": image})
	if _, err := apps(t).Namespace(ns).Update(t.Context(), u, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	setStatus(t, ns, "shop", map[string]any{"summary": map[string]any{"images": []any{image + ":1.0.0"}}})

	start := time.Now()
	boundary := start.UTC().Truncate(time.Minute).Add(2 * time.Minute)
	offset := boundary.Add(-2 * time.Second).Sub(start)
	now := func() time.Time { return time.Now().Add(offset) }
	opened := boundary.Add(-time.Hour)
	set := windows.Set{compileWindow(t, "freeze", config.SyncWindow{Kind: "deny",
		Schedule: fmt.Sprintf("%d %d * * *", opened.Minute(), opened.Hour()),
		Duration: config.Duration{Duration: time.Hour}, Applications: []string{"shop"}})}

	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	writer := &countingWriter{w: &kube.Writer{Client: dynClient(t)}, now: now}
	images := &controller.ImageReconciler{
		Registry: &registry.Client{},
		Writer:   writer,
		Windows:  fixedWindows(set),
		DryRun:   false,
		Log:      log,
		Now:      now,
	}
	reconciles := &requeueLog{ImageReconciler: images, now: now}
	engine := &controller.Engine{
		Sources:    []controller.Source{&watcher.KubeSource{Client: dynClient(t), Namespaces: []string{ns}, Log: log}},
		Reconciler: reconciles,
		Log:        log,
	}
	images.Queue = noFirstPass{engine}
	runEngine(t, engine)
	key := ns + "/shop"
	testwait.For(t, "the update to be held", func() bool { return images.Pending(key) })
	if p := writer.patches(); len(p) != 0 {
		t.Fatalf("patched while the deny window was open: %v", p)
	}

	timer := &controller.WindowTimer{Windows: fixedWindows(set), Engine: engine, Held: images, Log: log, Now: now}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- timer.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("timer returned %v", err)
		}
	})
	testwait.For(t, "the held update to be written", func() bool { return len(writer.patches()) > 0 })
	// The held reconcile asked to come back a second after the boundary:
	// a duplicate write would come from there, or from the timer's
	// enqueue, or from the write's own watch event, all done by then.
	testwait.For(t, "the requeue after the boundary to be reconciled", reconciles.requeuedAndDone)
	p := writer.patches()
	if len(p) != 1 {
		t.Fatalf("%d patches, want exactly 1", len(p))
	}
	if late := p[0].Sub(boundary); late < 0 || late > time.Second {
		t.Errorf("written %v after the window closed, want within 1s", late)
	}
	if images.Pending(key) {
		t.Error("still pending after the write")
	}
	got, err := apps(t).Namespace(ns).Get(t.Context(), "shop", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if imgs, _, _ := unstructured.NestedStringSlice(got.Object, "spec", "source", "kustomize", "images"); len(imgs) != 1 || imgs[0] != image+":1.1.0" {
		t.Errorf("kustomize images = %v, want [%s:1.1.0]", imgs, image)
	}
}

// fixedWindows is a ProjectWindows that is always the same windows, with
// no AppProject broken.
type fixedWindows windows.Set

func (f fixedWindows) Set() windows.Set { return windows.Set(f) }

func (fixedWindows) Broken(string) error { return nil }

// notifierFunc is a Notifier that calls the func.
type notifierFunc func(app *watcher.App, ev triggers.Event)

func (f notifierFunc) OnEvent(app *watcher.App, ev triggers.Event) { f(app, ev) }
