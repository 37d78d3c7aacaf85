package controller_test

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"

	"github.com/crowsnest-dev/crowsnest/controller"
	"github.com/crowsnest-dev/crowsnest/internal/testreg"
	"github.com/crowsnest-dev/crowsnest/internal/testwait"
	"github.com/crowsnest-dev/crowsnest/watcher"
)

// Setup of the scale tests: creating hundreds of Applications is the test's
// own traffic, not crowsnest's, so it runs with a bounded number of
// goroutines on a client whose limiter does not slow it down.
const (
	setupWorkers = 16
	setupQPS     = 2000
	setupBurst   = 2000
	// scaleTimeout bounds each wait of the scale tests; a pass over a
	// thousand Applications under -race on a busy 2-core machine takes
	// tens of seconds, not minutes.
	scaleTimeout = 2 * time.Minute
)

// scaleRepo names the i-th image repository of a scale test.
func scaleRepo(i int) string { return fmt.Sprintf("team/svc-%02d", i) }

// pushScaleTags pushes 1.0.0 (deployed), 1.<i+1>.0 (the newest allowed by
// ^1) and 2.0.0 (excluded by ^1) to each of n repositories, and returns the
// tag each repository should be updated to.
func pushScaleTags(t *testing.T, reg *testreg.OCI, n int) []string {
	t.Helper()
	t0 := time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)
	img := testreg.Image(t, t0, "linux/amd64")
	want := make([]string, n)
	for i := range n {
		want[i] = fmt.Sprintf("1.%d.0", i+1)
		for _, tag := range []string{"1.0.0", want[i], "2.0.0"} {
			reg.Push(t, scaleRepo(i)+":"+tag, img)
		}
	}
	return want
}

// semverAppDoc is an Application named name in ns that follows image by
// ^1 (Kubernetes write-back), as YAML for createAppsRunning.
func semverAppDoc(name, ns, image string) string {
	return fmt.Sprintf(`
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata:
  name: %[1]s
  namespace: %[2]s
  annotations:
    argocd-image-updater.argoproj.io/image-list: %[3]s:^1
spec:
  project: default
  destination: {server: https://kubernetes.default.svc, namespace: %[1]s}
  source: {repoURL: https://git.example.com/apps.git, path: apps/%[1]s, targetRevision: main}
`, name, ns, image)
}

// setupApps returns an Application client for the test's own setup.
func setupApps(t *testing.T, ns string) dynamic.ResourceInterface {
	t.Helper()
	cfg := rest.CopyConfig(env.Config)
	cfg.QPS, cfg.Burst = setupQPS, setupBurst
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return dyn.Resource(watcher.ApplicationsResource).Namespace(ns)
}

// createAppsRunning creates n Applications from the YAML doc(i) returns and
// records in their status that each runs image(i), as Argo CD would.
func createAppsRunning(t *testing.T, client dynamic.ResourceInterface, n int, doc, image func(i int) string) {
	t.Helper()
	g, ctx := errgroup.WithContext(t.Context())
	g.SetLimit(setupWorkers)
	for i := range n {
		g.Go(func() error {
			var obj map[string]any
			if err := yaml.Unmarshal([]byte(doc(i)), &obj); err != nil {
				return err
			}
			created, err := client.Create(ctx, &unstructured.Unstructured{Object: obj}, metav1.CreateOptions{})
			if err != nil {
				return fmt.Errorf("creating application %d: %w", i, err)
			}
			created.Object["status"] = map[string]any{"summary": map[string]any{"images": []any{image(i)}}}
			if _, err := client.Update(ctx, created, metav1.UpdateOptions{}); err != nil {
				return fmt.Errorf("setting the status of application %d: %w", i, err)
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
}

// eventLog is an in-memory EventRecorder: the scale tests assert on every
// Application's Events without sending thousands to the apiserver.
type eventLog struct {
	mu     sync.Mutex
	byKey  map[string][]string // namespace/name -> reasons
	byKind map[string]int      // reason -> count
	msgs   []string            // messages of Warning Events
}

var _ controller.EventRecorder = (*eventLog)(nil)

func (l *eventLog) Event(object runtime.Object, typ, reason, msg string) {
	key := fmt.Sprintf("%T", object)
	if ref, ok := object.(*corev1.ObjectReference); ok {
		key = ref.Namespace + "/" + ref.Name
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.byKey == nil {
		l.byKey, l.byKind = map[string][]string{}, map[string]int{}
	}
	l.byKey[key] = append(l.byKey[key], reason)
	l.byKind[reason]++
	if typ == corev1.EventTypeWarning {
		l.msgs = append(l.msgs, key+": "+reason+": "+msg)
	}
}

// warnings returns the Warning Events recorded, as "key: reason: message".
func (l *eventLog) warnings() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.msgs...)
}

func (l *eventLog) reasons(key string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.byKey[key]...)
}

func (l *eventLog) count(reason string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.byKind[reason]
}

// countingReconciler counts the successful reconciles of each key, so a
// test knows when every Application has been through the reconciler.
type countingReconciler struct {
	next controller.Reconciler

	mu   sync.Mutex
	done map[string]int
	errs []error
}

func (c *countingReconciler) Reconcile(ctx context.Context, req controller.Request) (controller.Result, error) {
	res, err := c.next.Reconcile(ctx, req)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.done == nil {
		c.done = map[string]int{}
	}
	if err != nil {
		c.errs = append(c.errs, fmt.Errorf("%s: %w", req.Key, err))
	} else {
		c.done[req.Key]++
	}
	return res, err
}

// keys is how many keys were reconciled successfully at least once.
func (c *countingReconciler) keys() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.done)
}

func (c *countingReconciler) errors() []error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]error(nil), c.errs...)
}

// waitScale is testwait.For with the scale tests' longer deadline
// (scaleTimeout); status describes progress in the failure message.
func waitScale(t *testing.T, what string, cond func() bool, status func() string) {
	t.Helper()
	testwait.Wait{Timeout: scaleTimeout, Detail: status}.For(t, what, cond)
}

// discardLog keeps the scale tests' thousands of log lines out of the
// output; failures are reported through assertions.
func discardLog() *slog.Logger { return slog.New(slog.DiscardHandler) }
