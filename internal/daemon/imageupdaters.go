package daemon

import (
	"context"
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/dynamic"

	"github.com/crowsnest-dev/crowsnest/controller"
	"github.com/crowsnest-dev/crowsnest/controller/imageupdaters"
	"github.com/crowsnest-dev/crowsnest/triggers"
	"github.com/crowsnest-dev/crowsnest/watcher"
)

// buildImageUpdaters wires argocd-image-updater 1.x's ImageUpdater
// resources in a cluster (Options.ImageUpdaters).
func (b *Daemon) buildImageUpdaters() error {
	if b.dyn != nil {
		b.imageUpdaters = wireImageUpdaters(b.o.ImageUpdaters, b.dyn, b.clientset, b.cfg.Watch.Namespaces,
			b.engine, b.images, b.o.DryRun, b.reg, b.log)
	}
	return nil
}

// wireImageUpdaters makes argocd-image-updater 1.x's ImageUpdater resources
// one more say in what images reconciles: their watcher becomes one of
// the engine's sources (the first pass waits for their first list) and
// the status writer a task run while leading (never in a dry run).
func wireImageUpdaters(mode string, dyn dynamic.Interface, disc imageupdaters.Discovery, namespaces []string,
	engine *controller.Engine, images *controller.ImageReconciler, dryRun bool, reg prometheus.Registerer, log *slog.Logger,
) []func(context.Context) error {
	if mode == imageupdaters.ModeOff || dyn == nil {
		return nil
	}
	metrics := imageupdaters.NewMetrics(reg)
	set := &imageupdaters.Set{Tenancy: images.Tenancy, Log: log, Metrics: metrics}
	w := &imageupdaters.Watcher{Client: dyn, Discovery: disc, Namespaces: namespaces, Mode: mode, Set: set, Queue: engine, Log: log}
	images.ImageUpdaters = set
	engine.Sources = append(engine.Sources, w)
	if dryRun {
		return nil
	}
	// Updates made for an ImageUpdater's Applications become its
	// status's recentUpdates.
	images.Notifier = observedNotifier{set: set, next: images.Notifier} // the Git batcher's announcements too (ImageReconciler.GitWritten)
	status := &imageupdaters.StatusWriter{Set: set, Apps: engine, Client: dyn, Store: w, Log: log, Metrics: metrics}
	return []func(context.Context) error{controller.WhenLeading(engine, status.Start)}
}

// observedNotifier hands each image event to the ImageUpdaters' Set
// (their status's recentUpdates) before the notifier.
type observedNotifier struct {
	set  *imageupdaters.Set
	next controller.ImageNotifier
}

func (o observedNotifier) OnEvent(app *watcher.App, ev triggers.Event) {
	o.set.Observe(app, ev)
	if o.next != nil {
		o.next.OnEvent(app, ev)
	}
}

func (o observedNotifier) Announces() bool { return o.next == nil || o.next.Announces() }
