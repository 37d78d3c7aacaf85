package controller_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/crowsnest-dev/crowsnest/controller"
	"github.com/crowsnest-dev/crowsnest/internal/testwait"
	"github.com/crowsnest-dev/crowsnest/watcher"
)

func TestEngineReconcilesApplicationEvents(t *testing.T) {
	ns1 := env.CreateNamespace(t, "engine-a")
	ns2 := env.CreateNamespace(t, "engine-b")
	outside := env.CreateNamespace(t, "engine-outside")
	rec := &recorder{}
	reg := prometheus.NewRegistry()
	e := &controller.Engine{
		Sources:    []controller.Source{&watcher.KubeSource{Client: dynClient(t), Namespaces: []string{ns1, ns2}}},
		Reconciler: rec,
		// One worker keeps the queue's FIFO order observable below.
		Workers: 1,
		Metrics: controller.NewMetrics(reg),
	}
	runEngine(t, e)

	createApp(t, outside, "ignored")
	first := createApp(t, ns1, "first")
	createApp(t, ns2, "second")
	testwait.For(t, "both applications reconciled", func() bool {
		return rec.count(ns1+"/first") == 1 && rec.count(ns2+"/second") == 1
	})

	// Status churn on "first", then a real change on "marker" in the same
	// namespace: the informer delivers them in order and the single worker
	// reconciles in queue order, so once "marker" is done, a reconcile
	// caused by the churn would already have happened.
	first.Object["status"] = map[string]any{"reconciledAt": "2026-11-22T10:00:00Z", "resources": []any{}}
	if _, err := apps(t).Namespace(ns1).Update(t.Context(), first, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	createApp(t, ns1, "marker")
	testwait.For(t, "marker reconciled", func() bool { return rec.count(ns1+"/marker") == 1 })
	if n := rec.count(ns1 + "/first"); n != 1 {
		t.Errorf("status churn caused a reconcile: %d reconciles of first, want 1", n)
	}

	// A spec change and a delete each reach the engine.
	cur, err := apps(t).Namespace(ns1).Get(t.Context(), "first", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := unstructured.SetNestedField(cur.Object, "v2", "spec", "source", "targetRevision"); err != nil {
		t.Fatal(err)
	}
	if _, err := apps(t).Namespace(ns1).Update(t.Context(), cur, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	testwait.For(t, "update reconciled", func() bool { return rec.count(ns1+"/first") == 2 })
	if err := apps(t).Namespace(ns1).Delete(t.Context(), "first", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	testwait.For(t, "delete reconciled", func() bool { return rec.count(ns1+"/first") == 3 })

	var got []string
	for _, r := range rec.requests() {
		if r.Key != ns1+"/first" {
			continue
		}
		if r.App == nil {
			got = append(got, "deleted")
		} else {
			got = append(got, "revision="+r.App.Sources[0].TargetRevision)
		}
	}
	if diff := cmp.Diff([]string{"revision=main", "revision=v2", "deleted"}, got); diff != "" {
		t.Errorf("requests for first (-want +got):\n%s", diff)
	}
	for _, r := range rec.requests() {
		if strings.HasPrefix(r.Key, outside+"/") {
			t.Errorf("reconciled an application outside the watched namespaces: %s", r.Key)
		}
		if r.Config == nil {
			t.Errorf("request for %s carries no config", r.Key)
		}
	}
	// The counter moves after the reconciler returns: the last one may
	// still be on its way.
	testwait.For(t, "crowsnest_reconcile_total to count every reconcile", func() bool {
		return counter(t, reg, "crowsnest_reconcile_total", map[string]string{"result": "success"}) == float64(len(rec.requests()))
	})
	if got := counter(t, reg, "crowsnest_applications", nil); got != 2 {
		t.Errorf("crowsnest_applications = %v, want 2 (second and marker)", got)
	}
}

// fileSource returns a file source over a folder holding the named apps.
func fileSource(t *testing.T, names ...string) *watcher.FileSource {
	t.Helper()
	dir := t.TempDir()
	for _, n := range names {
		doc := strings.Replace(appYAML, "name: placeholder", "name: "+n, 1)
		if err := os.WriteFile(filepath.Join(dir, n+".yaml"), []byte(doc), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return &watcher.FileSource{Dir: dir}
}

func TestEngineRetriesAndTerminalErrors(t *testing.T) {
	var flaky, broken, requeued atomic.Int32
	reg := prometheus.NewRegistry()
	e := &controller.Engine{
		Sources:        []controller.Source{fileSource(t, "flaky", "broken", "requeued")},
		RetryBaseDelay: 5 * time.Millisecond,
		RetryMaxDelay:  50 * time.Millisecond,
		Metrics:        controller.NewMetrics(reg),
		Reconciler: controller.ReconcilerFunc(func(_ context.Context, req controller.Request) (controller.Result, error) {
			switch req.Key {
			case "argocd/flaky":
				if flaky.Add(1) <= 2 {
					return controller.Result{}, errors.New("registry unavailable")
				}
			case "argocd/broken":
				broken.Add(1)
				return controller.Result{}, controller.Terminal(errors.New("malformed annotation"))
			case "argocd/requeued":
				if requeued.Add(1) == 1 {
					return controller.Result{RequeueAfter: 10 * time.Millisecond}, nil
				}
			}
			return controller.Result{}, nil
		}),
	}
	runEngine(t, e)
	testwait.For(t, "flaky to succeed on its third attempt", func() bool { return flaky.Load() == 3 })
	testwait.For(t, "requeued to come back", func() bool { return requeued.Load() == 2 })
	testwait.For(t, "metrics to settle", func() bool {
		return counter(t, reg, "crowsnest_reconcile_total", map[string]string{"result": "success"}) == 2
	})

	if got := broken.Load(); got != 1 {
		t.Errorf("terminal error retried: %d attempts, want 1", got)
	}
	want := map[string]float64{"error": 2, "terminal": 1, "requeue": 1, "success": 2}
	for result, n := range want {
		if got := counter(t, reg, "crowsnest_reconcile_total", map[string]string{"result": result}); got != n {
			t.Errorf("crowsnest_reconcile_total{result=%q} = %v, want %v", result, got, n)
		}
	}
	// The queue counts every delayed re-add: two backoffs and one RequeueAfter.
	if got := counter(t, reg, "crowsnest_workqueue_retries_total", nil); got != 3 {
		t.Errorf("crowsnest_workqueue_retries_total = %v, want 3", got)
	}
	if got := counter(t, reg, "crowsnest_reconcile_duration_seconds", nil); got != 6 {
		t.Errorf("reconcile duration observations = %v, want 6", got)
	}
}

func TestEngineRecoversFromPanics(t *testing.T) {
	var calls atomic.Int32
	reg := prometheus.NewRegistry()
	e := &controller.Engine{
		Sources:        []controller.Source{fileSource(t, "panicky")},
		RetryBaseDelay: 5 * time.Millisecond,
		Metrics:        controller.NewMetrics(reg),
		Reconciler: controller.ReconcilerFunc(func(context.Context, controller.Request) (controller.Result, error) {
			if calls.Add(1) == 1 {
				panic("bug")
			}
			return controller.Result{}, nil
		}),
	}
	runEngine(t, e)
	testwait.For(t, "a retry after the panic", func() bool { return calls.Load() == 2 })
	if got := counter(t, reg, "crowsnest_reconcile_total", map[string]string{"result": "error"}); got != 1 {
		t.Errorf("panic not counted as an error: %v", got)
	}
}

func TestEngineRunsOneReconcilePerKeyAtATime(t *testing.T) {
	var inFlight, maxInFlight, calls atomic.Int32
	e := &controller.Engine{
		Sources: []controller.Source{fileSource(t, "busy")},
		Workers: 8,
		Reconciler: controller.ReconcilerFunc(func(context.Context, controller.Request) (controller.Result, error) {
			n := inFlight.Add(1)
			defer inFlight.Add(-1)
			for {
				m := maxInFlight.Load()
				if n <= m || maxInFlight.CompareAndSwap(m, n) {
					break
				}
			}
			time.Sleep(2 * time.Millisecond) // sleep-ok: a reconcile that takes a while, so reconciles overlap
			calls.Add(1)
			return controller.Result{}, nil
		}),
	}
	runEngine(t, e)
	testwait.For(t, "first reconcile", func() bool { return calls.Load() >= 1 })
	for range 200 {
		e.Enqueue("argocd/busy")
	}
	testwait.For(t, "queued reconciles", func() bool { return calls.Load() >= 2 })
	if got := maxInFlight.Load(); got != 1 {
		t.Errorf("one key reconciled %d times at once, want 1", got)
	}
}

func TestProjectChangeRequeuesItsApplications(t *testing.T) {
	src := fileSource(t, "in-project", "elsewhere")
	// "in-project" belongs to project payments; "elsewhere" stays in default.
	path := filepath.Join(src.Dir, "in-project.yaml")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(strings.Replace(string(data), "project: default", "project: payments", 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	project := "apiVersion: argoproj.io/v1alpha1\nkind: AppProject\nmetadata: {name: payments}\nspec: {description: v1}\n"
	projectPath := filepath.Join(src.Dir, "project.yaml")
	if err := os.WriteFile(projectPath, []byte(project), 0o600); err != nil {
		t.Fatal(err)
	}
	rec := &recorder{}
	e := &controller.Engine{Sources: []controller.Source{src}, Reconciler: rec}
	runEngine(t, e)
	testwait.For(t, "initial reconciles", func() bool {
		return rec.count("argocd/in-project") >= 1 && rec.count("argocd/elsewhere") == 1
	})
	if e.Project("argocd/payments") == nil {
		t.Fatal("engine does not know the project")
	}
	before := rec.count("argocd/in-project")
	if err := os.WriteFile(projectPath, []byte(strings.Replace(project, "v1", "v2", 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	testwait.For(t, "the project's application to be requeued", func() bool { return rec.count("argocd/in-project") > before })
	if n := rec.count("argocd/elsewhere"); n != 1 {
		t.Errorf("an application of another project was reconciled %d times, want 1", n)
	}
}

// The first pass lasts until every Application known at the start was
// reconciled once, and a settling moment after (for the reconciles its
// own writes cause), however busy the engine stays.
func TestEngineFirstPassEndsOnceEveryApplicationWasReconciled(t *testing.T) {
	release := make(chan struct{})
	var done atomic.Int32
	e := &controller.Engine{
		Sources:         []controller.Source{fileSource(t, "a", "b", "c")},
		Workers:         1,
		FirstPassSettle: 300 * time.Millisecond,
		Reconciler: controller.ReconcilerFunc(func(_ context.Context, req controller.Request) (controller.Result, error) {
			if req.Key != "argocd/busy" {
				<-release
			}
			done.Add(1)
			return controller.Result{}, nil
		}),
	}
	if !e.InFirstPass() {
		t.Fatal("InFirstPass is false before the engine started")
	}
	runEngine(t, e)
	release <- struct{}{} // one of three reconciled
	testwait.For(t, "the first reconcile", func() bool { return done.Load() == 1 })
	if !e.InFirstPass() {
		t.Error("InFirstPass is false with two Applications of the first pass not reconciled yet")
	}
	close(release)
	testwait.For(t, "the three reconciles", func() bool { return done.Load() >= 3 })
	if !e.InFirstPass() {
		t.Error("InFirstPass is false at once after the last reconcile: the reconciles its writes cause would list again")
	}
	// Work keeps coming (an engine never idle), and the pass still ends.
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		for {
			select {
			case <-stop:
				return
			case <-time.After(5 * time.Millisecond):
				e.Enqueue("argocd/busy")
			}
		}
	}()
	testwait.For(t, "the first pass to end", func() bool { return !e.InFirstPass() })
}

// A single pass (run --once) reports a failed reconcile once and does not
// put it back on the queue: the failure is counted, and no retry was
// scheduled when it was (the queue counts a retry as it schedules it).
func TestEngineOnePassDoesNotRetry(t *testing.T) {
	var calls atomic.Int32
	reg := prometheus.NewRegistry()
	e := &controller.Engine{
		Sources:        []controller.Source{fileSource(t, "broken")},
		RetryBaseDelay: 5 * time.Millisecond,
		OnePass:        true,
		Metrics:        controller.NewMetrics(reg),
		Reconciler: controller.ReconcilerFunc(func(context.Context, controller.Request) (controller.Result, error) {
			calls.Add(1)
			return controller.Result{}, errors.New("registry unavailable")
		}),
	}
	runEngine(t, e)
	testwait.For(t, "the failure to be counted", func() bool {
		return counter(t, reg, "crowsnest_reconcile_total", map[string]string{"result": "error"}) == 1
	})
	if got := counter(t, reg, "crowsnest_workqueue_retries_total", nil); got != 0 {
		t.Errorf("crowsnest_workqueue_retries_total = %v, want 0: a single pass scheduled a retry", got)
	}
	if got := calls.Load(); got != 1 {
		t.Errorf("%d reconciles, want 1", got)
	}
}
