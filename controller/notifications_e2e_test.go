package controller_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/crowsnest-dev/crowsnest/controller"
	"github.com/crowsnest-dev/crowsnest/internal/kubecore/kubecoretest"
	"github.com/crowsnest-dev/crowsnest/internal/testnotify"
	"github.com/crowsnest-dev/crowsnest/internal/testwait"
	"github.com/crowsnest-dev/crowsnest/notify/outbox"
	"github.com/crowsnest-dev/crowsnest/notify/pipeline"
	"github.com/crowsnest-dev/crowsnest/watcher"
)

// notifyDaemon is the notification half of crowsnest run: an engine over a
// KubeSource feeding a Notifier, with state and outbox in ConfigMaps.
type notifyDaemon struct {
	stop func()
}

func startNotifyDaemon(t *testing.T, ns, hookURL string) *notifyDaemon {
	t.Helper()
	cs := kubeClient(t)
	src := &watcher.KubeSource{Client: dynClient(t), Namespaces: []string{ns}}
	out := &outbox.Outbox{Store: &outbox.ConfigMapStore{Client: kubecoretest.Wrap(cs), Namespace: ns}, RetryBaseDelay: 50 * time.Millisecond}
	n := &pipeline.Notifier{
		Outbox: out,
		State:  &pipeline.ConfigMapState{Client: kubecoretest.Wrap(cs), Namespace: ns},
		Apps:   testnotify.SyncedFunc(src.Synced),
		Setup:  testnotify.HookSetup,
	}
	if err := n.Apply(testnotify.Config(hookURL)); err != nil {
		t.Fatal(err)
	}
	e := &controller.Engine{
		Sources:     []controller.Source{src},
		Reconciler:  controller.ReconcilerFunc(func(context.Context, controller.Request) (controller.Result, error) { return controller.Result{}, nil }),
		Transitions: n,
	}
	d := &notifyDaemon{stop: testnotify.RunTasks(t, e.Run, controller.WhenLeading(e, out.Start), controller.WhenLeading(e, n.Start))}
	testwait.For(t, "engine caches synced", func() bool { return e.Ready() == nil && n.Started() })
	return d
}

func kubeClient(t *testing.T) kubernetes.Interface {
	t.Helper()
	cs, err := kubernetes.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// setAppStatus writes the Application's status as Argo CD would.
func setAppStatus(t *testing.T, ns, name, phase, health, revision string) {
	t.Helper()
	cur, err := apps(t).Namespace(ns).Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	status := map[string]any{
		"sync":   map[string]any{"status": "Synced", "revision": revision},
		"health": map[string]any{"status": health},
	}
	if phase != "" {
		status["operationState"] = map[string]any{
			"phase":      phase,
			"startedAt":  "2026-11-22T10:00:00Z",
			"operation":  map[string]any{"sync": map[string]any{"revision": revision}},
			"syncResult": map[string]any{"revision": revision},
		}
	}
	cur.Object["status"] = status
	if _, err := apps(t).Namespace(ns).Update(t.Context(), cur, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// createSubscribedApp creates an Application subscribed to every catalog
// trigger at the webhook service "hook".
func createSubscribedApp(t *testing.T, ns, name string) {
	t.Helper()
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "argoproj.io/v1alpha1", "kind": "Application",
		"spec": map[string]any{
			"project":     "default",
			"source":      map[string]any{"repoURL": "https://git.example/apps.git", "path": name, "targetRevision": "main"},
			"destination": map[string]any{"server": "https://kubernetes.default.svc", "namespace": name},
		},
	}}
	u.SetNamespace(ns)
	u.SetName(name)
	u.SetAnnotations(testnotify.SubscribeAll())
	if _, err := apps(t).Namespace(ns).Create(t.Context(), u, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func TestNotificationsEndToEnd(t *testing.T) {
	ns := env.CreateNamespace(t, "notify-e2e")
	sink := testnotify.NewSink(t)

	// 100 Applications that exist before crowsnest starts, deployed and
	// healthy, degraded or mid-sync, so that on-deployed,
	// on-health-degraded and on-sync-running are already true: a
	// baseline, nothing sent (the final message list has none of them).
	for i := range 100 {
		name := fmt.Sprintf("old-%d", i)
		createSubscribedApp(t, ns, name)
		switch i % 3 {
		case 0:
			setAppStatus(t, ns, name, "Succeeded", "Healthy", "r0")
		case 1:
			setAppStatus(t, ns, name, "Succeeded", "Degraded", "r0")
		default:
			setAppStatus(t, ns, name, "Running", "Progressing", "r0")
		}
	}
	// Start in a later second than they were created in, so that their
	// creationTimestamp (whole seconds) also marks them as older than the
	// Notifier.
	last, err := apps(t).Namespace(ns).Get(t.Context(), "old-99", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	created := last.GetCreationTimestamp().Time
	testwait.For(t, "a later second than the last creation", func() bool { return time.Now().Truncate(time.Second).After(created) })
	d := startNotifyDaemon(t, ns, sink.URL)

	createSubscribedApp(t, ns, "web")
	sink.WaitLast(t, "web:app-created")
	setAppStatus(t, ns, "web", "Running", "Missing", "r1")
	sink.WaitLast(t, "web:app-sync-running")
	setAppStatus(t, ns, "web", "Succeeded", "Progressing", "r1")
	sink.WaitLast(t, "web:app-sync-succeeded")

	// Restart in the middle: the new instance reads the state and the
	// outbox from their ConfigMaps and sends nothing again. The stop waits
	// for the outbox to record the delivery the sink already has: a stop
	// while the webhook's answer is on the wire leaves it pending, and
	// the outbox (at least once) sends it again.
	store := &outbox.ConfigMapStore{Client: kubecoretest.Wrap(kubeClient(t)), Namespace: ns}
	testwait.For(t, "no pending delivery", func() bool {
		recs, err := store.List(t.Context(), outbox.ListOptions{State: outbox.StatePending})
		return err == nil && len(recs) == 0
	})
	d.stop()
	startNotifyDaemon(t, ns, sink.URL)

	setAppStatus(t, ns, "web", "Succeeded", "Healthy", "r1")
	sink.WaitLast(t, "web:app-deployed")
	setAppStatus(t, ns, "web", "Succeeded", "Degraded", "r1")
	sink.WaitLast(t, "web:app-health-degraded")

	// Another controller rewrites every annotation (an ApplicationSet
	// does): the state is not there, so nothing is sent again. The next
	// sync is the marker that the rewrite was processed.
	cur, err := apps(t).Namespace(ns).Get(t.Context(), "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ann := testnotify.SubscribeAll()
	ann["applicationset.argoproj.io/rewritten"] = "true"
	cur.SetAnnotations(ann)
	if _, err := apps(t).Namespace(ns).Update(t.Context(), cur, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	setAppStatus(t, ns, "web", "Running", "Degraded", "r2")
	got := sink.WaitLast(t, "web:app-sync-running")

	want := []string{
		"web:app-created", "web:app-sync-running", "web:app-sync-succeeded",
		"web:app-deployed", "web:app-health-degraded", "web:app-sync-running",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("messages (-want +got):\n%s", diff)
	}
}
