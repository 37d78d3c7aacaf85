package watcher_test

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/crowsnest-dev/crowsnest/internal/testenv"
	"github.com/crowsnest-dev/crowsnest/internal/testwait"
	"github.com/crowsnest-dev/crowsnest/watcher"
)

// sourceModes are the two ways a KubeSource reads Applications: client-go's
// dynamic informer, and appStream (Config set), which `crowsnest run` uses.
var sourceModes = []struct {
	name     string
	streamed bool
}{{"dynamic", false}, {"streamed", true}}

func configIf(streamed bool, cfg *rest.Config) *rest.Config {
	if streamed {
		return cfg
	}
	return nil
}

// startSource runs src until the test ends and waits for its caches.
func startSource(t *testing.T, src interface {
	Start(context.Context, watcher.Handler) error
	Synced() bool
	SyncedDone() <-chan struct{}
}, h watcher.Handler,
) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	wg.Go(func() {
		if err := src.Start(ctx, h); err != nil {
			t.Errorf("source stopped with error: %v", err)
		}
	})
	t.Cleanup(func() { cancel(); wg.Wait() })
	select {
	case <-src.SyncedDone():
	case <-time.After(waitTimeout):
		t.Fatal("source did not sync")
	}
	if !src.Synced() {
		t.Error("SyncedDone is closed but Synced() is false")
	}
}

func TestKubeSourceEvents(t *testing.T) {
	for _, m := range sourceModes {
		t.Run(m.name, func(t *testing.T) { testKubeSourceEvents(t, m.streamed) })
	}
}

func testKubeSourceEvents(t *testing.T, streamed bool) {
	t.Helper()
	ns1 := env.CreateNamespace(t, "watch-a")
	ns2 := env.CreateNamespace(t, "watch-b")
	outside := env.CreateNamespace(t, "unwatched")
	dyn, err := dynamic.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	apps := dyn.Resource(watcher.ApplicationsResource)

	before := createApp(t, apps, ns2, "before", nil)
	// The reflector's first LIST (resourceVersion "0") is served from the
	// apiserver's watch cache, which may not have seen "before" yet under
	// load; it would then come as a watch event, not in the initial list.
	// A LIST not older than its creation waits for that cache.
	if _, err := apps.Namespace(ns2).List(t.Context(), metav1.ListOptions{ResourceVersion: before.GetResourceVersion(), ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan}); err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	rec := newRecorder()
	startSource(t, &watcher.KubeSource{Client: dyn, Config: configIf(streamed, env.Config), Namespaces: []string{ns1, ns2}, Metrics: watcher.NewMetrics(reg)}, rec)

	createApp(t, apps, outside, "ignored", nil)
	a := createApp(t, apps, ns1, "one", nil)
	createApp(t, apps, ns2, "two", nil)
	key1 := ns1 + "/one"
	added := rec.waitApp(t, isEvent(watcher.Added, key1))
	rec.waitApp(t, isEvent(watcher.Added, ns2+"/two"))
	// The initial list says so; what is created after does not.
	if ev := rec.waitApp(t, isEvent(watcher.Added, ns2+"/"+before.GetName())); !ev.Initial {
		t.Errorf("Added %s from the initial list: Initial = false", before.GetName())
	}
	if added.Initial {
		t.Errorf("Added %s, created after the source synced: Initial = true", key1)
	}

	if got := added.New.Decoded().GetManagedFields(); len(got) != 0 {
		t.Errorf("managedFields not trimmed: %v", got)
	}
	if diff := cmp.Diff([]string{"registry.example/guestbook:1.0.0"}, added.New.Sources[0].Kustomize.Images); diff != "" {
		t.Errorf("kustomize images (-want +got):\n%s", diff)
	}

	// Argo CD's churn: a status write to fields crowsnest does not read.
	a.Object["status"] = map[string]any{
		"reconciledAt": "2026-11-22T10:00:00Z",
		"resources":    []any{map[string]any{"kind": "Deployment", "name": "web", "status": "Synced"}},
	}
	a, err = apps.Namespace(ns1).Update(t.Context(), a, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// A status write crowsnest reads.
	if err := unstructured.SetNestedField(a.Object, "Degraded", "status", "health", "status"); err != nil {
		t.Fatal(err)
	}
	a, err = apps.Namespace(ns1).Update(t.Context(), a, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// A spec change.
	if err := unstructured.SetNestedStringSlice(a.Object, []string{"registry.example/guestbook:1.1.0"}, "spec", "source", "kustomize", "images"); err != nil {
		t.Fatal(err)
	}
	if _, err := apps.Namespace(ns1).Update(t.Context(), a, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := apps.Namespace(ns1).Delete(t.Context(), "one", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	rec.waitApp(t, isEvent(watcher.Deleted, key1))

	var got []string
	for _, ev := range rec.eventsFor(key1) {
		desc := string(ev.Type)
		switch ev.Type {
		case watcher.Updated:
			desc += " health=" + ev.New.HealthStatus + " image=" + ev.New.Sources[0].Kustomize.Images[0]
		case watcher.Deleted:
			desc += " last-health=" + ev.Old.HealthStatus
		}
		got = append(got, desc)
	}
	want := []string{
		"added",
		"updated health=Degraded image=registry.example/guestbook:1.0.0",
		"updated health=Degraded image=registry.example/guestbook:1.1.0",
		"deleted last-health=Degraded",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("events for %s (-want +got):\n%s", key1, diff)
	}
	for _, ev := range rec.appEvents() {
		if strings.HasPrefix(ev.Key(), outside+"/") {
			t.Errorf("event from unwatched namespace: %s %s", ev.Type, ev.Key())
		}
	}
	if got := metricSum(t, reg, "crowsnest_watch_events_filtered_total"); got < 1 {
		t.Errorf("filtered events metric = %v, want >= 1", got)
	}
}

func TestKubeSourceLabelSelector(t *testing.T) {
	for _, m := range sourceModes {
		t.Run(m.name, func(t *testing.T) { testKubeSourceLabelSelector(t, m.streamed) })
	}
}

func testKubeSourceLabelSelector(t *testing.T, streamed bool) {
	t.Helper()
	ns := env.CreateNamespace(t, "selector")
	dyn, err := dynamic.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	apps := dyn.Resource(watcher.ApplicationsResource)
	rec := newRecorder()
	startSource(t, &watcher.KubeSource{Client: dyn, Config: configIf(streamed, env.Config), Namespaces: []string{ns}, Selector: "team=payments"}, rec)

	createApp(t, apps, ns, "other-team", map[string]string{"team": "search"})
	createApp(t, apps, ns, "unlabelled", nil)
	createApp(t, apps, ns, "ours", map[string]string{"team": "payments"})
	rec.waitApp(t, isEvent(watcher.Added, ns+"/ours"))
	// The three creates were sequential; once the last is seen, the first two
	// would have been delivered before it had they matched.
	for _, ev := range rec.appEvents() {
		if ev.Key() != ns+"/ours" {
			t.Errorf("event for an application the selector excludes: %s", ev.Key())
		}
	}
}

func TestKubeSourceSurvivesAPIServerRestart(t *testing.T) {
	for _, m := range sourceModes {
		t.Run(m.name, func(t *testing.T) { testKubeSourceSurvivesAPIServerRestart(t, m.streamed) })
	}
}

func testKubeSourceSurvivesAPIServerRestart(t *testing.T, streamed bool) {
	t.Helper()
	e := testenv.New(t)
	dyn, err := dynamic.NewForConfig(e.Config)
	if err != nil {
		t.Fatal(err)
	}
	apps := dyn.Resource(watcher.ApplicationsResource)
	ns := e.CreateNamespace(t, "restart")
	rec := newRecorder()
	startSource(t, &watcher.KubeSource{Client: dyn, Config: configIf(streamed, e.Config), Projects: true}, rec)

	createApp(t, apps, ns, "before", nil)
	rec.waitApp(t, isEvent(watcher.Added, ns+"/before"))

	if err := e.StopAPIServer(); err != nil {
		t.Fatal(err)
	}
	if err := e.StartAPIServer(t.Context()); err != nil {
		t.Fatal(err)
	}
	createApp(t, apps, ns, "after", nil)
	rec.waitApp(t, isEvent(watcher.Added, ns+"/after"))
	// A relist after the restart may replay an unchanged object as a resync,
	// never as a change.
	for i, ev := range rec.eventsFor(ns + "/before") {
		if i > 0 && ev.Type != watcher.Resync {
			t.Errorf("application created before the restart replayed as %q after the relist", ev.Type)
		}
	}
}

// metricSum adds up every series of a counter in reg.
func metricSum(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var sum float64
	for _, mf := range mfs {
		if mf.GetName() == name {
			for _, m := range mf.GetMetric() {
				sum += m.GetCounter().GetValue()
			}
		}
	}
	return sum
}

func TestKubeSourceAppProjects(t *testing.T) {
	ns := env.CreateNamespace(t, "projects")
	dyn, err := dynamic.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	projects := dyn.Resource(watcher.AppProjectsResource).Namespace(ns)
	rec := newRecorder()
	startSource(t, &watcher.KubeSource{Client: dyn, Namespaces: []string{ns}, Projects: true}, rec)

	p := mustParse(t, "apiVersion: argoproj.io/v1alpha1\nkind: AppProject\nmetadata: {name: payments}\nspec:\n  syncWindows:\n  - {kind: deny, schedule: '0 22 * * *', duration: 8h}\n")
	p, err = projects.Create(t.Context(), p, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	p.Object["status"] = map[string]any{"jwtTokensByRole": map[string]any{}}
	if _, err := projects.Update(t.Context(), p, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	cur, err := projects.Get(t.Context(), "payments", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := unstructured.SetNestedField(cur.Object, "manual", "spec", "description"); err != nil {
		t.Fatal(err)
	}
	if _, err := projects.Update(t.Context(), cur, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := projects.Delete(t.Context(), "payments", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	key := ns + "/payments"
	want := []string{"added " + key, "updated " + key, "deleted " + key}
	testwait.For(t, "three project events", func() bool { return len(rec.projectEvents()) >= 3 })
	// The status write (never read) is filtered: exactly the three changes.
	if diff := cmp.Diff(want, rec.projectEvents()); diff != "" {
		t.Errorf("project events (-want +got):\n%s", diff)
	}
}

// appStream pages through a list as client-go's pager asks, and its
// lists and watches hold what the dynamic client and TrimApplication make
// of the same Applications, read from a real apiserver.
func TestAppStreamListAndWatch(t *testing.T) {
	ns := env.CreateNamespace(t, "stream")
	dyn, err := dynamic.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	apps := dyn.Resource(watcher.ApplicationsResource)
	for _, name := range []string{"a", "b", "c", "d", "e"} {
		a := createApp(t, apps, ns, name, map[string]string{"team": "payments"})
		a.Object["status"] = map[string]any{
			"health":    map[string]any{"status": "Healthy"},
			"resources": []any{map[string]any{"kind": "Deployment", "name": "web"}},
			"operationState": map[string]any{"phase": "Succeeded", "retryCount": int64(2),
				"startedAt": "2026-11-22T09:59:00Z",
				"operation": map[string]any{"sync": map[string]any{"revision": "abc"}},
				"syncResult": map[string]any{"revision": "abc", "resources": []any{map[string]any{
					"group": "apps", "version": "v1", "kind": "Deployment", "namespace": ns, "name": "web",
				}}}},
		}
		if _, err := apps.Namespace(ns).Update(t.Context(), a, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	createApp(t, apps, ns, "other-team", map[string]string{"team": "search"})

	trimmed := func(u *unstructured.Unstructured) map[string]any {
		out, err := watcher.TrimApplication(u.DeepCopy())
		if err != nil {
			t.Fatal(err)
		}
		return out.(*unstructured.Unstructured).Object
	}
	ref, err := apps.Namespace(ns).List(t.Context(), metav1.ListOptions{LabelSelector: "team=payments"})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]map[string]any{}
	for i := range ref.Items {
		want[ref.Items[i].GetName()] = trimmed(&ref.Items[i])
	}

	lw, err := watcher.AppListWatch(env.Config, ns, "team=payments")
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]map[string]any{}
	var pages int
	opts := metav1.ListOptions{Limit: 2}
	for {
		obj, err := lw.ListWithContext(t.Context(), opts)
		if err != nil {
			t.Fatal(err)
		}
		l := watcher.Unstored(obj).(*unstructured.UnstructuredList)
		pages++
		for i := range l.Items {
			got[l.Items[i].GetName()] = l.Items[i].Object
		}
		if l.GetResourceVersion() == "" {
			t.Error("list page without a resourceVersion")
		}
		if opts.Continue = l.GetContinue(); opts.Continue == "" {
			break
		}
	}
	if pages != 3 {
		t.Errorf("5 Applications in pages of 2 came in %d pages, want 3", pages)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("listed Applications (-dynamic and trimmed +streamed):\n%s", diff)
	}

	w, err := lw.WatchWithContext(t.Context(), metav1.ListOptions{ResourceVersion: ref.GetResourceVersion()})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	cur, err := apps.Namespace(ns).Get(t.Context(), "c", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := unstructured.SetNestedField(cur.Object, "Degraded", "status", "health", "status"); err != nil {
		t.Fatal(err)
	}
	if cur, err = apps.Namespace(ns).Update(t.Context(), cur, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	select {
	case ev := <-w.ResultChan():
		u, ok := watcher.Unstored(ev.Object).(*unstructured.Unstructured)
		if ev.Type != "MODIFIED" || !ok {
			t.Fatalf("watch event %s %T, want MODIFIED Application", ev.Type, ev.Object)
		}
		if diff := cmp.Diff(trimmed(cur), u.Object); diff != "" {
			t.Errorf("watched Application (-dynamic and trimmed +streamed):\n%s", diff)
		}
	case <-time.After(waitTimeout):
		t.Fatal("no watch event")
	}

	// A resourceVersion the apiserver no longer has is its error, which
	// makes the reflector relist.
	w2, err := lw.WatchWithContext(t.Context(), metav1.ListOptions{ResourceVersion: "1"})
	if err == nil {
		defer w2.Stop()
		select {
		case ev := <-w2.ResultChan():
			if ev.Type != "ERROR" || !apierrors.IsResourceExpired(apierrors.FromObject(ev.Object)) && !apierrors.IsGone(apierrors.FromObject(ev.Object)) {
				t.Errorf("watch from a compacted version: %s %v, want an expired error", ev.Type, ev.Object)
			}
		case <-time.After(waitTimeout):
			t.Fatal("no event from a watch at a compacted version")
		}
	} else if !apierrors.IsResourceExpired(err) && !apierrors.IsGone(err) {
		t.Errorf("watch from a compacted version: %v, want an expired error", err)
	}
}

// The reflector lists through appStream (no streaming list, though
// client-go asks for one by default), then watches: the cache holds the
// trimmed Applications and follows a change.
func TestAppStreamListsThenWatches(t *testing.T) {
	ns := env.CreateNamespace(t, "streamlist")
	dyn, err := dynamic.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	apps := dyn.Resource(watcher.ApplicationsResource)
	for _, name := range []string{"a", "b", "c"} {
		createApp(t, apps, ns, name, nil)
	}
	inf, lists, err := watcher.AppInformerListing(env.Config, ns)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	wg.Go(func() { inf.RunWithContext(ctx) })
	defer func() { cancel(); wg.Wait() }()
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		t.Fatal("informer did not sync")
	}
	if n := lists.Load(); n < 1 {
		t.Fatalf("%d LISTs; the reflector did not list", n)
	}
	keys := inf.GetStore().ListKeys()
	slices.Sort(keys)
	if diff := cmp.Diff([]string{ns + "/a", ns + "/b", ns + "/c"}, keys); diff != "" {
		t.Errorf("cached Applications (-want +got):\n%s", diff)
	}
	obj, _, _ := inf.GetStore().GetByKey(ns + "/b")
	if u := watcher.Unstored(obj).(*unstructured.Unstructured); len(u.GetManagedFields()) != 0 || u.GetName() != "b" {
		t.Errorf("listed Application not trimmed: %v", u.Object["metadata"])
	}

	b, err := apps.Namespace(ns).Get(t.Context(), "b", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := unstructured.SetNestedField(b.Object, "Degraded", "status", "health", "status"); err != nil {
		t.Fatal(err)
	}
	if _, err := apps.Namespace(ns).Update(t.Context(), b, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	testwait.For(t, "the watched change in the cache", func() bool {
		obj, _, _ := inf.GetStore().GetByKey(ns + "/b")
		health, _, _ := unstructured.NestedString(watcher.Unstored(obj).(*unstructured.Unstructured).Object, "status", "health", "status")
		return health == "Degraded"
	})
}
