package controller_test

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/yaml"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/crowsnest-dev/crowsnest/controller"
	"github.com/crowsnest-dev/crowsnest/internal/testenv"
	"github.com/crowsnest-dev/crowsnest/internal/testreg"
	"github.com/crowsnest-dev/crowsnest/registry"
	"github.com/crowsnest-dev/crowsnest/watcher"
	"github.com/crowsnest-dev/crowsnest/writeback/kube"
)

// waitTimeout bounds the waits on a channel in these tests, as
// testwait.Timeout bounds the polls; the engine reacts in milliseconds,
// leader failover takes a retry period.
const waitTimeout = 60 * time.Second

// recorder is a Reconciler that keeps every request in order.
type recorder struct {
	mu   sync.Mutex
	reqs []controller.Request
}

func (r *recorder) Reconcile(_ context.Context, req controller.Request) (controller.Result, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.reqs = append(r.reqs, req)
	return controller.Result{}, nil
}

func (r *recorder) requests() []controller.Request {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]controller.Request(nil), r.reqs...)
}

func (r *recorder) count(key string) int {
	n := 0
	for _, q := range r.requests() {
		if q.Key == key {
			n++
		}
	}
	return n
}

// runEngine runs e until the test ends or the returned stop is called;
// stop waits for Run to return and checks it returned nil.
func runEngine(t *testing.T, e *controller.Engine) func() {
	t.Helper()
	ctx, cancelFn := context.WithCancel(t.Context())
	ch := make(chan error, 1)
	go func() { ch <- e.Run(ctx) }()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cancelFn()
			select {
			case err := <-ch:
				if err != nil {
					t.Errorf("engine Run returned %v", err)
				}
			case <-time.After(waitTimeout):
				t.Error("engine did not stop after cancel")
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

func apps(t *testing.T) dynamic.NamespaceableResourceInterface {
	t.Helper()
	dyn, err := dynamic.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	return dyn.Resource(watcher.ApplicationsResource)
}

func dynClient(t *testing.T) dynamic.Interface {
	t.Helper()
	dyn, err := dynamic.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	return dyn
}

const appYAML = `
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata:
  name: placeholder
spec:
  project: default
  source: {repoURL: "https://git.example/apps.git", path: web, targetRevision: main}
  destination: {server: "https://kubernetes.default.svc", namespace: web}
`

// requestOf is the request a reconcile of the Application ns/name gets,
// as the apiserver has it now.
func requestOf(t *testing.T, ns, name string) controller.Request {
	t.Helper()
	u, err := apps(t).Namespace(ns).Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	app, err := watcher.AppFromObject(u)
	if err != nil {
		t.Fatal(err)
	}
	return controller.Request{Key: app.Key(), App: app}
}

func createApp(t *testing.T, ns, name string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(appYAML), &u.Object); err != nil {
		t.Fatal(err)
	}
	u.SetNamespace(ns)
	u.SetName(name)
	out, err := apps(t).Namespace(ns).Create(t.Context(), u, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating %s/%s: %v", ns, name, err)
	}
	return out
}

// counter returns the value of one counter series in reg, or 0.
func counter(t *testing.T, reg *prometheus.Registry, name string, labels map[string]string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	series:
		for _, m := range mf.GetMetric() {
			for _, lp := range m.GetLabel() {
				if want, ok := labels[lp.GetName()]; ok && want != lp.GetValue() {
					continue series
				}
			}
			switch {
			case m.GetCounter() != nil:
				return m.GetCounter().GetValue()
			case m.GetGauge() != nil:
				return m.GetGauge().GetValue()
			case m.GetHistogram() != nil:
				return float64(m.GetHistogram().GetSampleCount())
			}
		}
	}
	return 0
}

// appRegistry starts a registry holding team/app at 1.0.0 and, an hour
// newer, 1.1.0, and returns it with the image's name.
func appRegistry(t *testing.T) (*testreg.OCI, string) {
	t.Helper()
	reg := testreg.StartOCI(t, testreg.OCIOptions{})
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	reg.Push(t, "team/app:1.0.0", testreg.Image(t, t0, "linux/amd64"))
	reg.Push(t, "team/app:1.1.0", testreg.Image(t, t0.Add(time.Hour), "linux/amd64"))
	return reg, reg.Host() + "/team/app"
}

// watchedImageReconciler is a reconciler of Kubernetes-mode write-backs
// whose Events and debug log (also returned as a logger for the engine)
// the test reads.
func watchedImageReconciler(t *testing.T) (*controller.ImageReconciler, *msgEvents, *testenv.LogBuffer, *slog.Logger) {
	t.Helper()
	logs := &testenv.LogBuffer{}
	log := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	events := &msgEvents{}
	images := &controller.ImageReconciler{
		Registry: &registry.Client{},
		Writer:   &kube.Writer{Client: dynClient(t)},
		Events:   events,
		Log:      log,
	}
	return images, events, logs, log
}

// runWatchedImageEngine runs an image engine over ns with a
// watchedImageReconciler.
func runWatchedImageEngine(t *testing.T, ns string) (*controller.Engine, *msgEvents, *testenv.LogBuffer) {
	t.Helper()
	images, events, logs, log := watchedImageReconciler(t)
	return runImageEngine(t, ns, images, log), events, logs
}

// runImageEngine runs, until the test ends, an Engine that reconciles the
// Applications of ns with images (which it wires to enqueue on it).
func runImageEngine(t *testing.T, ns string, images *controller.ImageReconciler, log *slog.Logger) *controller.Engine {
	t.Helper()
	engine := &controller.Engine{
		Sources:    []controller.Source{&watcher.KubeSource{Client: dynClient(t), Namespaces: []string{ns}, Log: log}},
		Reconciler: images,
		Log:        log,
	}
	images.Queue = noFirstPass{engine}
	runEngine(t, engine)
	return engine
}

// noFirstPass is the engine as an image reconciler's WorkQueue without the
// first pass's tag waits, for tests with no poller to read the tag lists
// a first pass waits for (firstpass_test.go and tagwait_test.go test it).
type noFirstPass struct{ *controller.Engine }

func (noFirstPass) InFirstPass() bool { return false }

// sameHosts is registry.Hosts that gives every host the same settings.
type sameHosts registry.HostConfig

func (s sameHosts) HostConfig(string) registry.HostConfig { return registry.HostConfig(s) }
