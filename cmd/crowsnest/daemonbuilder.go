package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/flowcontrol"

	"github.com/crowsnest-dev/crowsnest/config"
	"github.com/crowsnest-dev/crowsnest/config/reload"
	"github.com/crowsnest-dev/crowsnest/controller"
	"github.com/crowsnest-dev/crowsnest/controller/dryrun"
	"github.com/crowsnest-dev/crowsnest/controller/tenancy"
	"github.com/crowsnest-dev/crowsnest/internal/httpserver"
	"github.com/crowsnest-dev/crowsnest/internal/kubecore"
	"github.com/crowsnest-dev/crowsnest/internal/kubeevents"
	"github.com/crowsnest-dev/crowsnest/internal/localkube"
	"github.com/crowsnest-dev/crowsnest/internal/logging"
	"github.com/crowsnest-dev/crowsnest/internal/setup"
	"github.com/crowsnest-dev/crowsnest/notify"
	"github.com/crowsnest-dev/crowsnest/notify/pipeline"
	"github.com/crowsnest-dev/crowsnest/registry"
	"github.com/crowsnest-dev/crowsnest/registry/creds"
	"github.com/crowsnest-dev/crowsnest/watcher"
	gitwb "github.com/crowsnest-dev/crowsnest/writeback/git"
	"github.com/crowsnest-dev/crowsnest/writeback/git/collect"
	"github.com/crowsnest-dev/crowsnest/writeback/git/repocreds"
	"github.com/crowsnest-dev/crowsnest/writeback/journal"
	"github.com/crowsnest-dev/crowsnest/writeback/kube"
)

// daemonBuilder is `crowsnest run` being built: each build step constructs one
// part from the flags, the config and the parts built before it (the
// order of runOptions.run), and start runs them. Parts a step does not
// build in this mode (the kube clients in local mode, the Git writer
// without files or a cluster) stay nil.
type daemonBuilder struct {
	o   *runOptions
	cmd *cobra.Command

	plans      *planPrinter
	reg        *prometheus.Registry
	cfgWatcher *reload.Watcher // nil without --config
	cfg        *config.Config  // the effective config at start
	baseDir    string          // resolves the config's relative paths
	level      *slog.LevelVar
	log        *slog.Logger

	// effectiveCfg is the effective config in force; reloads replace it.
	current      sync.Mutex
	effectiveCfg *config.Config

	engine       *controller.Engine
	watchMetrics *watcher.Metrics
	// restCfg is set with a cluster (Applications in it, or a Lease).
	restCfg *rest.Config
	// dyn and meta are set in cluster mode only: Applications read from
	// files are never written to a cluster; files in local mode only.
	dyn       dynamic.Interface
	meta      *kube.MetaPatcher
	files     *watcher.FileSource
	clientset *kubecore.Clientset
	secrets   creds.SecretGetter

	regs     *setup.Registries
	webhooks http.Handler
	tally    *controller.PassTally // --once only
	images   *controller.ImageReconciler
	timer    *controller.WindowTimer

	local     *localkube.Apps
	localLogs *logEvents
	gw        *gitwb.Writer

	notifier *pipeline.Notifier
	outbox   *notify.Outbox
	servers  []*httpserver.Server

	// closers run at the end, last first (the outbox journal, then the
	// Events still pending).
	closers []func()
}

// Local mode's in-memory Applications are the image reconciler's writer
// and the dry run's planner.
var (
	_ controller.ImageWriter = (*localkube.Apps)(nil)
	_ dryrun.PatchPlanner    = (*localkube.Apps)(nil)
)

// close runs the closers, last first.
func (b *daemonBuilder) close() {
	for i := len(b.closers) - 1; i >= 0; i-- {
		b.closers[i]()
	}
}

// buildConfig loads the config file (watched for changes) and merges the
// flags over it; the metrics registry is made first, as the config
// watcher counts its loads.
func (b *daemonBuilder) buildConfig() error {
	o := b.o
	b.reg = prometheus.NewRegistry()
	b.reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	fileCfg := config.Default()
	if o.configPath != "" {
		b.cfgWatcher = &reload.Watcher{Path: o.configPath, Metrics: reload.NewMetrics(b.reg)}
		c, err := b.cfgWatcher.Load()
		if err != nil {
			return err
		}
		fileCfg = c
	}
	cfg, err := o.effective(b.cmd, fileCfg)
	if err != nil {
		return err
	}
	if o.gitSSHKnownHosts != "" {
		if _, err := gitwb.ReadKnownHostsFile(o.gitSSHKnownHosts); err != nil {
			return fmt.Errorf("--git-ssh-known-hosts: %w", err)
		}
	}
	b.cfg, b.effectiveCfg = cfg, cfg
	b.baseDir = "."
	if o.configPath != "" {
		b.baseDir = filepath.Dir(o.configPath)
	}
	return nil
}

// buildLogger builds the logger the config asks for (its level follows
// reloads) and routes klog into it.
func (b *daemonBuilder) buildLogger() error {
	b.level = &slog.LevelVar{}
	lvl, err := logging.ParseLevel(b.cfg.Log.Level)
	if err != nil {
		return err
	}
	b.level.Set(lvl)
	if b.log, err = logging.New(b.cmd.ErrOrStderr(), b.cfg.Log.Format, b.level); err != nil {
		return err
	}
	logging.RouteKlog(b.log)
	if b.cfgWatcher != nil {
		b.cfgWatcher.Log = b.log
	}
	return nil
}

// buildEngine builds the sync engine, which reads the config in force.
func (b *daemonBuilder) buildEngine() error {
	cfg := b.cfg
	b.engine = &controller.Engine{
		Workers:        cfg.Controller.Workers,
		RetryBaseDelay: cfg.Controller.RetryBaseDelay.Duration,
		RetryMaxDelay:  cfg.Controller.RetryMaxDelay.Duration,
		OnePass:        b.o.once,
		Metrics:        controller.NewMetrics(b.reg),
		Log:            b.log,
		Config: func() *config.Config {
			b.current.Lock()
			defer b.current.Unlock()
			return b.effectiveCfg
		},
	}
	b.watchMetrics = watcher.NewMetrics(b.reg)
	return nil
}

// buildKube builds the kube clients and the engine's source of
// Applications: the folder (--apps-dir), or the cluster's Applications
// and AppProjects.
func (b *daemonBuilder) buildKube() error {
	o, cfg, log := b.o, b.cfg, b.log
	if o.appsDir == "" || cfg.LeaderElection.Enabled {
		restCfg, err := o.restConfig(cfg)
		if err != nil {
			return err
		}
		restCfg.Wrap(newKubeRequestMetrics(b.reg).wrap)
		b.restCfg = restCfg
	}
	if o.appsDir != "" {
		b.files = &watcher.FileSource{Dir: o.appsDir, Log: log, Metrics: b.watchMetrics}
		b.engine.Sources = []controller.Source{b.files}
	} else if err := b.buildKubeSource(); err != nil {
		return err
	}
	if b.restCfg != nil {
		cs, err := kubecore.NewForConfig(b.restCfg)
		if err != nil {
			return fmt.Errorf("building kube client: %w", err)
		}
		b.clientset, b.secrets = cs, creds.KubeSecrets{Client: cs}
	}
	return nil
}

// buildKubeSource builds the clients of Applications and the source that
// watches them in the cluster.
func (b *daemonBuilder) buildKubeSource() error {
	o, cfg, log, restCfg := b.o, b.cfg, b.log, b.restCfg
	if _, err := labels.Parse(cfg.Watch.Selector); err != nil {
		return fmt.Errorf("--selector: %w", err)
	}
	// Reads and patches of Applications share one rate limiter; the
	// patches' answers carry metadata only.
	appsCfg := rest.CopyConfig(restCfg)
	appsCfg.RateLimiter = flowcontrol.NewTokenBucketRateLimiter(restCfg.QPS, restCfg.Burst)
	dyn, err := dynamic.NewForConfig(appsCfg)
	if err != nil {
		return fmt.Errorf("building kube client: %w", err)
	}
	if b.meta, err = kube.MetadataOnlyClient(appsCfg); err != nil {
		return err
	}
	b.dyn = dyn
	b.engine.Sources = []controller.Source{&watcher.KubeSource{
		Client:       dyn,
		Config:       appsCfg,
		Namespaces:   cfg.Watch.Namespaces,
		Selector:     cfg.Watch.Selector,
		ResyncPeriod: cfg.Watch.ResyncPeriod.Duration,
		Projects:     cfg.Watch.WatchAppProjects(),
		// Argo CD reads AppProjects in its own namespace only: one a
		// team makes in its own namespace is nobody's project.
		ProjectNamespaces: []string{o.argocdNamespace},
		Log:               log,
		Metrics:           b.watchMetrics,
	}}
	return nil
}

// buildRegistries builds the registry side (clients, credentials,
// poller) and the registry webhook receiver.
func (b *daemonBuilder) buildRegistries() error {
	regs, err := setup.NewRegistries(b.cfg, b.baseDir, b.secrets, registry.NewMetrics(b.reg), b.log)
	if err != nil {
		return err
	}
	b.regs = regs
	if b.webhooks, err = setup.NewWebhookHandler(b.cfg.Registries.Webhook, regs.Poller, b.reg, b.log); err != nil {
		return err
	}
	return nil
}

// buildImages builds the image reconciler with its tenancy rules and the
// sync windows' timer, and makes it the engine's reconciler.
func (b *daemonBuilder) buildImages() error {
	o, log, engine, regs := b.o, b.log, b.engine, b.regs
	windowSource := &controller.WindowSource{Engine: engine, Config: engine.Config, Log: log}
	if b.files == nil {
		windowSource.Namespace = o.argocdNamespace
	}
	if o.once {
		b.tally = &controller.PassTally{}
	}
	images := &controller.ImageReconciler{
		Tally:         b.tally,
		Registry:      regs.Client,
		RegistryFor:   regs.ForPullSecret,
		Names:         regs.Qualify,
		Poller:        regs.Poller,
		Windows:       windowSource.Set,
		BrokenProject: windowSource.Broken,
		Policies:      (&controller.PolicySource{Config: engine.Config, Log: log}).Policies,
		Enqueue:       engine.Enqueue,
		DryRun:        o.dryRun,
		Plans:         b.plans,
		Metrics:       controller.NewImageMetrics(b.reg),
		Log:           log,
	}
	images.Tenancy = &tenancy.Rules{
		Config:   func() *config.Tenancy { return &engine.Config().Tenancy },
		Project:  controller.ArgoProject(engine, o.argocdNamespace, b.files != nil),
		Assigned: regs.Assigned,
	}
	images.Tenancy.LocalRepos = b.files != nil
	if b.files == nil {
		// A missing default project (not yet recreated, not watched, or
		// a wrong --argocd-namespace) admits only Argo CD's own
		// namespace, as the one Argo CD recreates does.
		images.Tenancy.ArgoNamespace = o.argocdNamespace
	}
	winMetrics := controller.NewWindowMetrics(b.reg)
	images.WindowMetrics = winMetrics
	b.timer = &controller.WindowTimer{Windows: images.Windows, Engine: engine, Pending: images.Pending, Metrics: winMetrics, Log: log}
	if b.dyn != nil && !o.dryRun {
		b.timer.Apps = b.dyn
	}
	regs.Poller.OnChange = images.RepoChanged
	// One tag list per repository serves the whole first pass, however
	// long it takes.
	images.FirstPass, regs.Poller.Hold = engine.InFirstPass, engine.InFirstPass
	engine.Reconciler = images
	b.images = images
	return nil
}

// buildLocalWriters builds local mode's writers: Kubernetes-mode
// write-backs patch an in-memory copy, Events are logged, Git writes are
// real, with their journal in a file.
func (b *daemonBuilder) buildLocalWriters(gitMetrics *gitwb.Metrics) error {
	o, cfg, log, images := b.o, b.cfg, b.log, b.images
	b.local = localkube.New(b.files, log)
	b.localLogs = &logEvents{log: log, onEvent: o.onEvent}
	images.Writer, images.Events = b.local, kubeevents.Redact(b.localLogs)
	var err error
	if b.gw, err = setup.NewGitWriter(cfg, o.gitCacheDir, envGitCredentials(), gitMetrics, log); err != nil {
		return err
	}
	// A Git write a killed run pushed but did not announce is
	// announced by the next run from this journal: in --state-dir,
	// else beside the clones in --git-cache-dir, one file per folder.
	journalDir := o.stateDir
	if journalDir == "" {
		journalDir = o.gitCacheDir
	}
	images.Journal = &journal.File{Path: journal.FileName(journalDir, o.appsDir)}
	return nil
}

// buildKubeWriters builds cluster mode's writers: patches of the
// Applications, Events through a client of their own, Git with Argo CD's
// repository credentials, the write journal in a ConfigMap.
func (b *daemonBuilder) buildKubeWriters(gitMetrics *gitwb.Metrics) error {
	o, cfg, log, images, engine, restCfg := b.o, b.cfg, b.log, b.images, b.engine, b.restCfg
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
		Metrics: kubeevents.NewMetrics(b.reg), Log: log, Busy: engine.Working}
	events.Start()
	b.closers = append(b.closers, func() { events.Shutdown(eventFlushTimeout) })
	images.Events = kubeevents.Redact(events)
	if o.once { // --dry-run --once: Warnings count as in local mode
		b.localLogs = &logEvents{log: slog.New(slog.DiscardHandler)}
		images.Events = teeEvents{images.Events, b.localLogs}
	}
	gitCredentials := &repocreds.ArgoCD{Client: b.clientset, Namespace: o.argocdNamespace, KnownHostsFile: o.gitSSHKnownHosts,
		Trusted: func(ns, name string) bool { return trustedGitSecret(engine.Config(), ns+"/"+name) },
		Bound:   gitSecretBinding{engine: engine, rules: images.Tenancy}}
	if b.gw, err = setup.NewGitWriter(cfg, o.gitCacheDir, gitCredentials, gitMetrics, log); err != nil {
		return err
	}
	images.Journal = &journal.ConfigMaps{Client: b.clientset, Namespace: o.ownNamespace(cfg)}
	return nil
}

// buildWriters builds the write-backs of the mode (local or cluster) and
// the Git batcher when there is a Git writer.
func (b *daemonBuilder) buildWriters() error {
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
	images.Git = &collect.Batcher{
		Writer:  b.gw,
		Tally:   b.tally,
		Busy:    func() bool { return !engine.Idle() },
		Enqueue: engine.EnqueueAfter,
		Events:  images.Events,
		Metrics: images.Metrics,
		Log:     b.log,
	}
	batcher := images.Git
	b.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "crowsnest_git_writeback_pending",
		Help: "Applications whose Git write-back waits for the next batch or is being written.",
	}, func() float64 { return float64(batcher.Pending()) }))
	images.Git.OnUnchanged, images.Git.OnAnnounced = images.GitUnchanged, images.GitAnnounced
	images.Git.Announce, images.App = images.GitWritten, engine.App
	if b.dyn != nil && !b.o.dryRun {
		refresher := &kube.Refresher{Client: b.dyn, Mode: func() string { return engine.Config().Git.Refresh }}
		images.Git.Refresh = refresher.Refresh
	}
	return nil
}

// buildNotifier builds the notifier and its outbox: every observed
// transition goes to the notifier in order; only the leader evaluates
// and delivers.
func (b *daemonBuilder) buildNotifier(ctx context.Context) error {
	o, cfg, log, images, engine := b.o, b.cfg, b.log, b.images, b.engine
	var notifyClient kubecore.Interface
	if b.dyn != nil {
		notifyClient = b.clientset
	}
	notifier, outbox, err := newNotifications(ctx, cfg, notifyClient, o.ownNamespace(cfg), o.dryRun, b.reg, log)
	if err != nil {
		return err
	}
	b.notifier, b.outbox = notifier, outbox
	if o.stateDir != "" && !o.dryRun {
		if outbox.Journal, err = notify.OpenJournal(o.stateDir, log); err != nil {
			return fmt.Errorf("--state-dir: %w", err)
		}
		b.closers = append(b.closers, func() { _ = outbox.Journal.Close() })
	}
	notifier.Synced = controller.SourcesSynced(engine.Sources)
	// Subscriptions come from the project Argo CD goes by, never from a
	// same-named one in another namespace.
	notifier.Project = controller.ArgoProject(engine, o.argocdNamespace, b.files != nil)
	notifier.CheckRepo = images.Tenancy.CheckRepository
	if b.gw != nil {
		// repo.GetCommitMetadata / GetAppDetails read through write-back's
		// Writer: its clone locks are per Writer.
		notifier.Repo = &pipeline.Repo{Git: b.gw, Check: images.Tenancy.CheckRepository}
	}
	engine.Transitions = notifier.OnAppEvent
	images.Notify, b.timer.Notify = notifier.OnEvent, notifier.OnEvent
	images.Announces = notifier.Announces
	return nil
}

// buildLeaderElection gives the engine its Lease when leader election is
// on.
func (b *daemonBuilder) buildLeaderElection() error {
	cfg := b.cfg
	if cfg.LeaderElection.Enabled {
		cs := b.clientset
		b.engine.LeaderElection = &controller.LeaderElection{
			Client:        cs,
			Namespace:     cfg.LeaderElection.LeaseNamespace,
			Name:          cfg.LeaderElection.LeaseName,
			LeaseDuration: cfg.LeaderElection.LeaseDuration.Duration,
			RenewDeadline: cfg.LeaderElection.RenewDeadline.Duration,
			RetryPeriod:   cfg.LeaderElection.RetryPeriod.Duration,
		}
	}
	return nil
}

// buildReload makes the config watcher accept only versions that pass
// the start's checks, and apply an accepted one to the parts that take
// it while running.
func (b *daemonBuilder) buildReload() error {
	if b.cfgWatcher == nil {
		return nil
	}
	o, cmd := b.o, b.cmd
	// Compiling triggers and policies is part of accepting a version,
	// so one that does not compile is counted and logged as rejected.
	b.cfgWatcher.Accept = func(next *config.Config) error {
		_, err := o.effective(cmd, next)
		return err
	}
	b.cfgWatcher.OnChange = func(_, next *config.Config) { b.reload(next) }
	return nil
}

// reload applies a new version of the config file.
func (b *daemonBuilder) reload(next *config.Config) {
	o, log := b.o, b.log
	eff, err := o.effective(b.cmd, next)
	if err != nil {
		log.Error("config reload rejected", "path", o.configPath, "error", err)
		return
	}
	if l, err := logging.ParseLevel(eff.Log.Level); err == nil {
		b.level.Set(l)
	}
	b.current.Lock()
	prev := b.effectiveCfg
	b.effectiveCfg = eff
	b.current.Unlock()
	if err := b.regs.Reload(eff, b.baseDir); err != nil {
		log.Error("registries reload failed; the previous registry settings stay in force", "error", err)
	}
	if err := b.notifier.Apply(eff); err != nil {
		log.Error("notifications reload rejected; the previous notifications stay in force", "error", err)
	}
	b.timer.Wake()
	warnRestartOnly(log, prev, eff)
	log.Info("config reloaded", "path", o.configPath)
	b.engine.RequeueAll()
}

// buildServers builds the HTTP servers (metrics, health, pprof, the
// registry webhooks when configured) and makes them listen, so a taken
// port fails the start.
func (b *daemonBuilder) buildServers() error {
	o, log := b.o, b.log
	b.servers = []*httpserver.Server{
		{Name: "metrics", Addr: o.metricsAddr, Handler: promhttp.HandlerFor(b.reg, promhttp.HandlerOpts{Registry: b.reg}), Log: log},
		{Name: "health", Addr: o.probeAddr, Handler: b.engine.HealthHandler(), Log: log},
		{Name: "pprof", Addr: o.pprofAddr, Handler: pprofHandler(), Log: log},
	}
	if b.webhooks != nil {
		b.servers = append(b.servers, &httpserver.Server{Name: "webhooks", Addr: o.webhookAddr, Handler: b.webhooks, Log: log})
	}
	for _, s := range b.servers {
		if _, err := s.Listen(); err != nil {
			return err
		}
	}
	return nil
}

// start runs every part until ctx ends or one fails (runAll): the
// engine, the poller, the window timer, the outbox and notifier while
// leading, the ImageUpdaters' wiring in a cluster, the pass's end with
// --once, the Git batcher, the servers and the config watcher.
func (b *daemonBuilder) start(ctx context.Context) error {
	o, cfg, log, engine, images := b.o, b.cfg, b.log, b.engine, b.images
	logAIUNotes(log, o.aiuNotes)
	log.Info("crowsnest starting", "version", version, "namespaces", strings.Join(cfg.Watch.Namespaces, ","),
		"selector", cfg.Watch.Selector, "appsDir", o.appsDir, "leaderElect", cfg.LeaderElection.Enabled)

	tasks := []func(context.Context) error{engine.Run, b.regs.Poller.Start, b.timer.Start,
		controller.WhenLeading(engine, b.outbox.Start), controller.WhenLeading(engine, b.notifier.Start)}
	if b.dyn != nil {
		tasks = append(tasks, wireImageUpdaters(o.imageUpdaters, b.dyn, b.clientset, cfg.Watch.Namespaces,
			engine, images, o.dryRun, b.reg, log)...)
	}
	waiter := &passWaiter{engine: engine, git: images.Git, outbox: b.outbox, settle: 500 * time.Millisecond}
	if o.once {
		tasks = append(tasks, func(ctx context.Context) error { return b.onePass(ctx, waiter) })
	}
	if o.started != nil {
		o.started(&runParts{engine: engine, poller: b.regs.Poller, local: b.local, outbox: b.outbox, wait: waiter})
	}
	if images.Git != nil {
		tasks = append(tasks, images.Git.Start)
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

// onePass is --once's task: it waits for the pass to end, prints the
// plans (--dry-run) and the summary, and fails when anything did.
func (b *daemonBuilder) onePass(ctx context.Context, waiter *passWaiter) error {
	o, log := b.o, b.log
	if waiter.wait(ctx) != nil {
		return ctx.Err() // stopped from outside before the pass ended
	}
	if o.dryRun {
		log.Info("dry run: plans printed", "applications", b.plans.Flush())
	}
	var problems []watcher.FileProblem
	if b.files != nil {
		problems = b.files.Problems()
	}
	failed := b.localLogs.Warnings() + deadLetters(ctx, b.outbox) + len(problems)
	summary := b.tally.Summary()
	fmt.Fprintf(b.cmd.ErrOrStderr(), "crowsnest: one pass: %s\n", summary)
	if failed > 0 {
		return fmt.Errorf("one pass finished with %d failure(s); see the warnings above%s", failed, describeFileProblems(problems))
	}
	log.Info("one pass finished", "applications", b.engine.AppCount(), "updated", summary.Updated,
		"upToDate", summary.UpToDate, "held", summary.Held)
	return nil
}
