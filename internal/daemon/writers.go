package daemon

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/flowcontrol"

	"github.com/crowsnest-dev/crowsnest/controller"
	"github.com/crowsnest-dev/crowsnest/internal/kubecore"
	"github.com/crowsnest-dev/crowsnest/internal/kubeevents"
	"github.com/crowsnest-dev/crowsnest/internal/localkube"
	"github.com/crowsnest-dev/crowsnest/internal/setup"
	"github.com/crowsnest-dev/crowsnest/notify/outbox"
	"github.com/crowsnest-dev/crowsnest/notify/pipeline"
	gitwb "github.com/crowsnest-dev/crowsnest/writeback/git"
	"github.com/crowsnest-dev/crowsnest/writeback/git/collect"
	"github.com/crowsnest-dev/crowsnest/writeback/git/repocreds"
	"github.com/crowsnest-dev/crowsnest/writeback/journal"
	"github.com/crowsnest-dev/crowsnest/writeback/kube"
)

// buildLocalWriters builds local mode's writers: Kubernetes-mode
// write-backs patch an in-memory copy, Events are logged, Git writes are
// real, with their journal in a file.
func (b *Daemon) buildLocalWriters(gitMetrics *gitwb.Metrics) error {
	o, cfg, log, images := &b.o, b.cfg, b.log, b.images
	b.local = localkube.New(b.files, log)
	b.localLogs = &logEvents{log: log}
	images.Writer, images.Events = b.local, kubeevents.Redact(observe(b.localLogs, o.Observer))
	var err error
	if b.gw, err = setup.NewGitWriter(cfg, o.GitCacheDir, envGitCredentials(), gitMetrics, log, &b.notifyApps); err != nil {
		return err
	}
	// A Git write a killed run pushed but did not announce is
	// announced by the next run from this journal: in --state-dir,
	// else beside the clones in --git-cache-dir, one file per folder.
	journalDir := o.StateDir
	if journalDir == "" {
		journalDir = o.GitCacheDir
	}
	images.Journal = &journal.File{Path: journal.FileName(journalDir, o.AppsDir)}
	return nil
}

// buildKubeWriters builds cluster mode's writers: patches of the
// Applications, Events through a client of their own, Git with Argo CD's
// repository credentials, the write journal in a ConfigMap.
func (b *Daemon) buildKubeWriters(gitMetrics *gitwb.Metrics) error {
	o, cfg, log, images, engine, restCfg := &b.o, b.cfg, b.log, b.images, b.engine, b.restCfg
	images.Writer = &kube.Writer{Client: b.dyn, MetaClient: b.meta, Log: log}
	// Events go through a client of their own, with a rate limiter of
	// the same size as the main one: a burst of Events never delays
	// or throttles write-backs, and keeps pace with them. While the
	// engine is working, Events wait for it (at most 10 s each): an
	// Event costs the apiserver about what a write costs. The sink
	// never drops one without counting and logging it.
	eventCfg := rest.CopyConfig(restCfg)
	eventCfg.RateLimiter = flowcontrol.NewTokenBucketRateLimiter(restCfg.QPS, restCfg.Burst)
	eventClient, err := kubecore.NewForConfig(eventCfg)
	if err != nil {
		return fmt.Errorf("kube client for Events: %w", err)
	}
	events := &kubeevents.Sink{Client: eventClient, Source: corev1.EventSource{Component: "crowsnest"},
		Metrics: kubeevents.NewMetrics(b.reg), Log: log, WriteBacks: engine}
	events.Start()
	b.closers = append(b.closers, func() { events.Shutdown(eventFlushTimeout) })
	images.Events = kubeevents.Redact(observe(events, o.Observer))
	if o.Once { // --dry-run --once: Warnings count as in local mode
		b.localLogs = &logEvents{log: slog.New(slog.DiscardHandler)}
		images.Events = teeEvents{images.Events, b.localLogs}
	}
	secrets := gitSecrets{engine: engine, rules: images.Tenancy}
	gitCredentials := &repocreds.ArgoCD{Client: b.clientset, Namespace: o.ArgoCDNamespace, KnownHostsFile: o.GitSSHKnownHosts,
		Trust: secrets, Bound: secrets}
	if b.gw, err = setup.NewGitWriter(cfg, o.GitCacheDir, gitCredentials, gitMetrics, log, &b.notifyApps); err != nil {
		return err
	}
	images.Journal = &journal.ConfigMaps{Client: b.clientset, Namespace: o.ownNamespace(cfg)}
	return nil
}

// buildWriters builds the write-backs of the mode (local or cluster) and
// the Git batcher when there is a Git writer.
func (b *Daemon) buildWriters() error {
	gitMetrics := gitwb.NewMetrics(b.reg)
	if b.files != nil {
		if err := b.buildLocalWriters(gitMetrics); err != nil {
			return err
		}
	}
	if b.dyn != nil {
		if err := b.buildKubeWriters(gitMetrics); err != nil {
			return err
		}
	}
	if b.gw == nil {
		return nil
	}
	images, engine := b.images, b.engine
	batcher := &collect.Batcher{Writer: b.gw, Engine: engine}
	if b.dyn != nil && !b.o.DryRun {
		images.Refresher = &kube.Refresher{Client: b.dyn, Mode: refreshMode{engine}}
	}
	if !b.o.DryRun {
		images.PullRequests = b.gw
	}
	b.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "crowsnest_git_writeback_pending",
		Help: "Applications whose Git write-back waits for the next batch or is being written.",
	}, func() float64 { return float64(batcher.Pending()) }))
	images.Git = batcher
	return nil
}

// buildNotifier builds the notifier and its outbox: every observed
// transition goes to the notifier in order; only the leader evaluates
// and delivers.
func (b *Daemon) buildNotifier(ctx context.Context) error {
	o, cfg, log, images, engine := &b.o, b.cfg, b.log, b.images, b.engine
	var notifyClient kubecore.Interface
	if b.dyn != nil {
		notifyClient = b.clientset
	}
	notifier, ob, err := NewNotifications(ctx, cfg, notifyClient, o.ownNamespace(cfg), o.DryRun, b.reg, log, &b.notifyApps)
	if err != nil {
		return err
	}
	b.notifier, b.outbox = notifier, ob
	if o.StateDir != "" && !o.DryRun {
		if ob.Journal, err = outbox.OpenJournal(o.StateDir, log); err != nil {
			return fmt.Errorf("--state-dir: %w", err)
		}
		b.closers = append(b.closers, func() { _ = ob.Journal.Close() })
	}
	notifier.Apps = controller.EngineView{Engine: engine, ArgoNamespace: o.ArgoCDNamespace, InAppNamespace: b.files != nil}
	notifier.Repos = images.Tenancy
	if b.gw != nil {
		// repo.GetCommitMetadata / GetAppDetails read through write-back's
		// Writer: its clone locks are per Writer.
		notifier.Repo = &pipeline.Repo{Git: b.gw, Policy: images.Tenancy}
	}
	engine.Transitions = notifier
	b.timer.Notifier = notifier
	images.Notifier = notifier
	if b.iuSet != nil && !o.DryRun {
		// Updates made for an ImageUpdater's Applications become its
		// status's recentUpdates: the Git batcher's announcements too
		// (ImageReconciler.GitWritten).
		images.Notifier = observedNotifier{set: b.iuSet, next: notifier}
	}
	return nil
}

// refreshMode is kube.Mode: the refresh mode of the config in force.
type refreshMode struct{ engine *controller.Engine }

func (m refreshMode) RefreshMode() string { return m.engine.Config().Git.Refresh }
