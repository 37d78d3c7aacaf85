package controller_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/dynamic"

	"github.com/crowsnest-dev/crowsnest/controller"
	"github.com/crowsnest-dev/crowsnest/internal/testreg"
	"github.com/crowsnest-dev/crowsnest/internal/testwait"
	"github.com/crowsnest-dev/crowsnest/registry"
	"github.com/crowsnest-dev/crowsnest/watcher"
	"github.com/crowsnest-dev/crowsnest/writeback/kube"
)

// A cold start's reconciles do not hold workers while a tag list is read:
// with one worker, and the lists of the first three Applications'
// repositories held by the registry, the other Applications are patched
// meanwhile; the three are patched once their lists arrive. Until then the
// engine is not idle and its first pass is not over, and each repository
// is listed once.
func TestFirstPassWaitsForTagListsOffTheQueue(t *testing.T) {
	const slow, fast = 3, 5
	reg := testreg.StartOCI(t, testreg.OCIOptions{})
	want := pushScaleTags(t, reg, slow+1)
	release := make(chan struct{})
	reg.SetFault(func(_ http.ResponseWriter, r *http.Request) bool {
		for i := range slow {
			if strings.HasSuffix(r.URL.Path, "/"+scaleRepo(i)+"/tags/list") {
				<-release
			}
		}
		return false
	})
	var released bool
	t.Cleanup(func() {
		if !released {
			close(release)
		}
	})
	// Names sort the slow repositories' Applications first: the informer
	// lists them in that order, so they reach the one worker first.
	appName := func(i int) string {
		if i < slow {
			return fmt.Sprintf("a-slow-%d", i)
		}
		return fmt.Sprintf("b-fast-%d", i-slow)
	}
	repo := func(i int) int { return min(i, slow) }
	image := func(i int) string { return reg.Host() + "/" + scaleRepo(repo(i)) }
	ns := env.CreateNamespace(t, "tag-wait")
	createAppsRunning(t, setupApps(t, ns), slow+fast, func(i int) string {
		return semverAppDoc(appName(i), ns, image(i))
	}, func(i int) string { return image(i) + ":1.0.0" })

	dyn, err := dynamic.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	metrics := prometheus.NewRegistry()
	events := &eventLog{}
	engine := &controller.Engine{Workers: 1, FirstPassSettle: 10 * time.Millisecond, Metrics: controller.NewMetrics(metrics), Log: discardLog()}
	engine.Sources = []controller.Source{&watcher.KubeSource{Client: dyn, Namespaces: []string{ns}, Log: discardLog()}}
	reconciles := &requeueLog{ImageReconciler: &controller.ImageReconciler{
		Registry: &registry.Client{Log: discardLog()},
		Writer:   &kube.Writer{Client: dyn, Log: discardLog()},
		Queue:    engine,
		Events:   events,
		Log:      discardLog(),
	}, now: time.Now}
	engine.Reconciler = reconciles
	runEngine(t, engine)
	updated := func(i int) bool {
		return len(events.reasons(ns+"/"+appName(i))) > 0
	}
	testwait.For(t, "the Applications of the repository that answers to be patched", func() bool {
		for i := slow; i < slow+fast; i++ {
			if !updated(i) {
				return false
			}
		}
		return true
	})
	for i := range slow {
		if updated(i) {
			t.Errorf("%s was updated while its tag list was held", appName(i))
		}
	}
	// A wrong first pass would end FirstPassSettle after the last key
	// came through (the engine notes it just after the reconcile returns:
	// twice that covers the note); this one still waits for three.
	testwait.For(t, "no reconcile for twice FirstPassSettle", func() bool { return reconciles.quietFor(2 * engine.FirstPassSettle) })
	if engine.Idle() {
		t.Error("engine idle while three Applications wait for their tag lists")
	}
	if engine.Working() { // waiting for a registry writes nothing: Events need not wait
		t.Error("engine working while its Applications only wait for their tag lists")
	}
	if !engine.InFirstPass() {
		t.Error("first pass over while three Applications were not reconciled")
	}

	close(release)
	released = true
	testwait.For(t, "the waiting Applications to be patched", func() bool {
		for i := range slow {
			if !updated(i) {
				return false
			}
		}
		return true
	})
	testwait.For(t, "the engine to be idle", engine.Idle)
	for i := range slow + fast {
		if got := events.reasons(ns + "/" + appName(i)); len(got) != 1 || got[0] != controller.EventImagesUpdated {
			t.Errorf("%s: Events %v, want one %s (to %s)", appName(i), got, controller.EventImagesUpdated, want[repo(i)])
		}
	}
	for i := range slow + 1 {
		if n := reg.Count("list", "/v2/"+scaleRepo(i)+"/tags/list"); n != 1 {
			t.Errorf("%s: %d tag lists, want 1", scaleRepo(i), n)
		}
	}
	// Each Application waits at most once: the three slow ones did, and
	// those of the answering repository that came while its list was
	// being read.
	waited := counter(t, metrics, "crowsnest_reconcile_total", map[string]string{"result": controller.ResultWaiting})
	if waited < slow || waited > slow+fast {
		t.Errorf("%v reconciles waited for a tag list, want %d to %d", waited, slow, slow+fast)
	}
}
