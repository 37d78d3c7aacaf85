package controller_test

import (
	"fmt"
	"testing"
	"time"

	"k8s.io/client-go/dynamic"

	"github.com/crowsnest-dev/crowsnest/controller"
	"github.com/crowsnest-dev/crowsnest/internal/testreg"
	"github.com/crowsnest-dev/crowsnest/internal/testwait"
	"github.com/crowsnest-dev/crowsnest/registry"
	"github.com/crowsnest-dev/crowsnest/watcher"
	"github.com/crowsnest-dev/crowsnest/writeback/kube"
)

// However short the tag cache's life (a pass of thousands of Applications
// outlasts any), the engine's first pass lists each repository once; after
// it, a reconcile asks the registry again once the cache expired.
func TestFirstPassListsEachRepositoryOnce(t *testing.T) {
	const apps, repos = 60, 3
	reg := testreg.StartOCI(t, testreg.OCIOptions{})
	pushScaleTags(t, reg, repos)
	image := func(i int) string { return reg.Host() + "/" + scaleRepo(i%repos) }
	ns := env.CreateNamespace(t, "first-pass")
	setup := setupApps(t, ns)
	createAppsRunning(t, setup, apps, func(i int) string {
		return semverAppDoc(fmt.Sprintf("app-%02d", i), ns, image(i))
	}, func(i int) string { return image(i) + ":1.0.0" })

	dyn, err := dynamic.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	events := &eventLog{}
	engine := &controller.Engine{Workers: 4, Log: discardLog()}
	engine.Sources = []controller.Source{&watcher.KubeSource{Client: dyn, Namespaces: []string{ns}, Log: discardLog()}}
	engine.Reconciler = &controller.ImageReconciler{
		// Every list is stale at once: without the first pass, each
		// reconcile would list again.
		Registry: &registry.Client{TagTTL: time.Nanosecond, Log: discardLog()},
		Writer:   &kube.Writer{Client: dyn, Log: discardLog()},
		Queue:    engine,
		Events:   events,
		Log:      discardLog(),
	}
	reg.Reset()
	runEngine(t, engine)
	waitScale(t, "every Application to be patched", func() bool { return events.count(controller.EventImagesUpdated) >= apps },
		func() string { return fmt.Sprintf("%d patched", events.count(controller.EventImagesUpdated)) })
	testwait.For(t, "the first pass to end", func() bool { return !engine.InFirstPass() })
	for i := range repos {
		if n := reg.Count("list", "/v2/"+scaleRepo(i)+"/tags/list"); n != 1 {
			t.Errorf("%s: %d tag lists in the first pass, want 1", scaleRepo(i), n)
		}
	}

	engine.Enqueue(ns + "/app-00")
	testwait.For(t, "a reconcile after the pass to list again", func() bool {
		return reg.Count("list", "/v2/"+scaleRepo(0)+"/tags/list") == 2
	})
}
