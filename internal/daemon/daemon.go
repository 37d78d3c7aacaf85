package daemon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/crowsnest-dev/crowsnest/controller"
	"github.com/crowsnest-dev/crowsnest/controller/imageupdate"
	"github.com/crowsnest-dev/crowsnest/watcher"
)

// passSettle is how long the daemon must stay idle for a pass to count as
// done: one step hands work to the next (a reconcile to the Git batcher,
// a commit to a notification) within it.
const passSettle = 500 * time.Millisecond

// New builds the daemon from o, one part per step (daemon.go's steps;
// build.go, writers.go), and makes its servers listen, so a bad config or
// a taken port fails here. Run runs it; on error New releases what it
// built.
func New(ctx context.Context, o Options) (*Daemon, error) {
	if err := o.check(); err != nil {
		return nil, err
	}
	b := &Daemon{o: o, plans: o.Plans}
	if b.plans == nil {
		b.plans = dropPlans{}
	}
	steps := []func() error{
		b.buildConfig, b.buildLogger, b.buildEngine, b.buildKube, b.buildRegistries, b.buildImages, b.buildImageUpdaterSet, b.buildWriters,
		func() error { return b.buildNotifier(ctx) },
		b.buildLeaderElection, b.buildReload, b.buildServers, b.buildImageUpdaters,
	}
	for _, step := range steps {
		if err := step(); err != nil {
			b.close()
			return nil, err
		}
	}
	b.waiter = &passWaiter{engine: b.engine, git: b.images.Git, outbox: b.outbox, settle: passSettle}
	return b, nil
}

// Run runs every part until ctx ends or one fails (runAll): the engine,
// the poller, the window timer, the outbox and notifier while leading,
// the ImageUpdaters' status in a cluster, the pass's end with Once, the
// Git batcher, the servers and the config watcher. It then releases what
// New built; a Daemon runs once.
func (b *Daemon) Run(ctx context.Context) error {
	if !b.running.CompareAndSwap(false, true) {
		return errors.New("daemon: Run called twice")
	}
	defer b.close()
	o, cfg, log, engine, images := &b.o, b.cfg, b.log, b.engine, b.images
	logIgnoredFlags(log, o.IgnoredFlags)
	log.Info("crowsnest starting", "version", o.Version, "namespaces", strings.Join(cfg.Watch.Namespaces, ","),
		"selector", cfg.Watch.Selector, "appsDir", o.AppsDir, "leaderElect", cfg.LeaderElection.Enabled)

	tasks := []func(context.Context) error{engine.Run, b.regs.Poller.Start, b.timer.Start,
		controller.WhenLeading(engine, b.outbox.Start), controller.WhenLeading(engine, b.notifier.Start)}
	tasks = append(tasks, b.imageUpdaters...)
	if o.Once {
		tasks = append(tasks, b.onePass)
	}
	if images.Git != nil {
		tasks = append(tasks, images.RunGit, controller.WhenLeading(engine, images.RunPullRequests))
	}
	for _, s := range b.servers {
		tasks = append(tasks, s.Serve)
	}
	if b.cfgWatcher != nil {
		tasks = append(tasks, b.cfgWatcher.Start)
	}
	err := runAll(ctx, tasks)
	if errors.Is(err, controller.ErrLeadershipLost) {
		log.Error("leadership lost; exiting so a fresh process can campaign again")
	}
	return err
}

// WaitIdle blocks until the daemon has nothing left to do, or ctx ends:
// the engine's sources synced and its queue idle, no Git batch waiting
// or being written, no notification pending, for half a second in a row.
// It is how a caller knows a pass (the first one, or the one after a
// push) is done; Once ends the run there.
func (b *Daemon) WaitIdle(ctx context.Context) error { return b.waiter.wait(ctx) }

// Refresh polls repository (host/path) now, as a registry webhook's push
// does; false when no Application uses it.
func (b *Daemon) Refresh(repository string) bool { return b.regs.Poller.Refresh(repository) }

// LocalApplication returns, in local mode, the in-memory copy of an
// Application after Kubernetes-mode write-backs patched it; false when
// none was written, or in cluster mode (where the cluster holds it).
func (b *Daemon) LocalApplication(ctx context.Context, namespace, name string) (*unstructured.Unstructured, bool) {
	if b.local == nil {
		return nil, false
	}
	return b.local.Patched(ctx, namespace, name)
}

// close runs the closers, last first.
func (b *Daemon) close() {
	for i := len(b.closers) - 1; i >= 0; i-- {
		b.closers[i]()
	}
	b.closers = nil
}

// onePass is Once's task: it waits for the pass to end, flushes the
// plans (DryRun) and writes the summary, and fails when anything did.
func (b *Daemon) onePass(ctx context.Context) error {
	o, log := &b.o, b.log
	if b.waiter.wait(ctx) != nil {
		return ctx.Err() // stopped from outside before the pass ended
	}
	if o.DryRun {
		log.Info("dry run: plans printed", "applications", b.plans.Flush())
	}
	var problems []watcher.FileProblem
	if b.files != nil {
		problems = b.files.Problems()
	}
	failed := b.localLogs.Warnings() + deadLetters(ctx, b.outbox) + len(problems)
	summary := b.tally.Summary()
	fmt.Fprintf(o.Stderr, "crowsnest: one pass: %s\n", summary)
	if failed > 0 {
		return fmt.Errorf("one pass finished with %d failure(s); see the warnings above%s", failed, describeFileProblems(problems))
	}
	log.Info("one pass finished", "applications", b.engine.AppCount(), "updated", summary.Updated,
		"upToDate", summary.UpToDate, "held", summary.Held)
	return nil
}

// logIgnoredFlags logs each flag given that has no effect, once, at start.
func logIgnoredFlags(log *slog.Logger, flags []IgnoredFlag) {
	for _, n := range flags {
		log.Warn("argocd-image-updater flag has no effect in crowsnest", "flag", "--"+n.Flag, "instead", n.Instead)
	}
}

// dropPlans is the PlanRecorder when none is given.
type dropPlans struct{}

func (dropPlans) RecordPlan(imageupdate.WritePlan) {}
func (dropPlans) Flush() int                       { return 0 }
