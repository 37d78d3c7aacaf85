package daemon

import (
	"context"

	"github.com/crowsnest-dev/crowsnest/controller"
	"github.com/crowsnest-dev/crowsnest/controller/imageupdaters"
	"github.com/crowsnest-dev/crowsnest/triggers"
	"github.com/crowsnest-dev/crowsnest/watcher"
)

// buildImageUpdaterSet makes argocd-image-updater 1.x's ImageUpdater
// resources in a cluster (Options.ImageUpdaters) one more say in what
// images reconciles: their Set. buildNotifier hands it the image events
// (their status's recentUpdates) and buildImageUpdaters watches them.
func (b *Daemon) buildImageUpdaterSet() error {
	if b.dyn == nil || b.o.ImageUpdaters == imageupdaters.ModeOff {
		return nil
	}
	b.iuMetrics = imageupdaters.NewMetrics(b.reg)
	// imagesVerification's keys are read through the same client as
	// pull secrets (creds.KubeSecrets).
	b.iuSet = &imageupdaters.Set{Tenancy: b.images.Tenancy, Secrets: b.secrets, Log: b.log, Metrics: b.iuMetrics}
	b.images.ImageUpdaters = b.iuSet
	return nil
}

// buildImageUpdaters wires the ImageUpdaters' watcher as one of the
// engine's sources (the first pass waits for their first list) and their
// status writer as a task run while leading (never in a dry run).
func (b *Daemon) buildImageUpdaters() error {
	if b.iuSet == nil {
		return nil
	}
	w := &imageupdaters.Watcher{Client: b.dyn, Discovery: b.clientset, Namespaces: b.cfg.Watch.Namespaces,
		Mode: b.o.ImageUpdaters, Set: b.iuSet, Queue: b.engine, Log: b.log}
	b.engine.Sources = append(b.engine.Sources, w)
	if b.o.DryRun {
		return nil
	}
	status := &imageupdaters.StatusWriter{Set: b.iuSet, Apps: b.engine, Client: b.dyn, Store: w, Log: b.log, Metrics: b.iuMetrics}
	b.imageUpdaters = []func(context.Context) error{controller.WhenLeading(b.engine, status.Start)}
	return nil
}

// observedNotifier hands each image event to the ImageUpdaters' Set
// (their status's recentUpdates) before the notifier.
type observedNotifier struct {
	set  *imageupdaters.Set
	next controller.ImageNotifier
}

func (o observedNotifier) OnEvent(app *watcher.App, ev triggers.Event) {
	o.set.Observe(app, ev)
	o.next.OnEvent(app, ev)
}

func (o observedNotifier) Announces() bool { return o.next.Announces() }
