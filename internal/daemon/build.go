package daemon

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/flowcontrol"

	"github.com/crowsnest-dev/crowsnest/config"
	"github.com/crowsnest-dev/crowsnest/config/reload"
	"github.com/crowsnest-dev/crowsnest/controller"
	"github.com/crowsnest-dev/crowsnest/controller/dryrun"
	"github.com/crowsnest-dev/crowsnest/controller/imageupdaters"
	"github.com/crowsnest-dev/crowsnest/controller/tenancy"
	"github.com/crowsnest-dev/crowsnest/internal/httpserver"
	"github.com/crowsnest-dev/crowsnest/internal/kubecore"
	"github.com/crowsnest-dev/crowsnest/internal/localkube"
	"github.com/crowsnest-dev/crowsnest/internal/logging"
	"github.com/crowsnest-dev/crowsnest/internal/setup"
	"github.com/crowsnest-dev/crowsnest/notify/outbox"
	"github.com/crowsnest-dev/crowsnest/notify/pipeline"
	"github.com/crowsnest-dev/crowsnest/registry"
	"github.com/crowsnest-dev/crowsnest/registry/creds"
	"github.com/crowsnest-dev/crowsnest/watcher"
	gitwb "github.com/crowsnest-dev/crowsnest/writeback/git"
	"github.com/crowsnest-dev/crowsnest/writeback/kube"
)

// Daemon is crowsnest's daemon, built (New) and ready to run (Run): the
// sync engine with its Application sources, the image reconciler and
// window timer, the write-backs, the notifier and its outbox, and the
// HTTP servers. New builds one part per step from the options, the
// config and the parts built before it; parts a step does not build in
// this mode (the kube clients in local mode, the Git writer without
// files or a cluster) stay nil.
type Daemon struct {
	o Options

	plans      PlanRecorder
	reg        *prometheus.Registry
	cfgWatcher *reload.Watcher // nil without ConfigPath
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
	tally    *controller.PassTally // Once only
	images   *controller.ImageReconciler
	timer    *controller.WindowTimer

	local     *localkube.Apps
	localLogs *logEvents
	gw        *gitwb.Writer
	// notifyApps are the notification services in force, which the
	// notifications' setup keeps and the Git writer lends GitHub Apps
	// from.
	notifyApps setup.NotificationApps

	notifier *pipeline.Notifier
	outbox   *outbox.Outbox
	servers  []*httpserver.Server
	waiter   *passWaiter
	// iuSet and iuMetrics are the ImageUpdaters' (a cluster only, nil
	// when they are off).
	iuSet     *imageupdaters.Set
	iuMetrics *imageupdaters.Metrics
	// imageUpdaters are the ImageUpdaters' tasks (a cluster only).
	imageUpdaters []func(context.Context) error
	running       atomic.Bool

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

// buildConfig loads the config file (watched for changes) and merges the
// flags over it; the metrics registry is made first, as the config
// watcher counts its loads.
func (b *Daemon) buildConfig() error {
	o := &b.o
	b.reg = prometheus.NewRegistry()
	b.reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	fileCfg := config.Default()
	if o.ConfigPath != "" {
		b.cfgWatcher = &reload.Watcher{Path: o.ConfigPath, Metrics: reload.NewMetrics(b.reg)}
		c, err := b.cfgWatcher.Load()
		if err != nil {
			return err
		}
		fileCfg = c
	}
	cfg, err := o.effective(fileCfg)
	if err != nil {
		return err
	}
	if o.GitSSHKnownHosts != "" {
		if _, err := gitwb.ReadKnownHostsFile(o.GitSSHKnownHosts); err != nil {
			return fmt.Errorf("--git-ssh-known-hosts: %w", err)
		}
	}
	b.cfg, b.effectiveCfg = cfg, cfg
	b.baseDir = o.baseDir()
	return nil
}

// buildLogger builds the logger the config asks for (its level follows
// reloads) and routes klog into it.
func (b *Daemon) buildLogger() error {
	b.level = &slog.LevelVar{}
	lvl, err := logging.ParseLevel(b.cfg.Log.Level)
	if err != nil {
		return err
	}
	b.level.Set(lvl)
	if b.log, err = logging.New(b.o.Stderr, b.cfg.Log.Format, b.level); err != nil {
		return err
	}
	logging.RouteKlog(b.log)
	if b.cfgWatcher != nil {
		b.cfgWatcher.Log = b.log
	}
	return nil
}

// buildEngine builds the sync engine, which reads the config in force.
func (b *Daemon) buildEngine() error {
	cfg := b.cfg
	b.engine = &controller.Engine{
		Workers:        cfg.Controller.Workers,
		RetryBaseDelay: cfg.Controller.RetryBaseDelay.Duration,
		RetryMaxDelay:  cfg.Controller.RetryMaxDelay.Duration,
		OnePass:        b.o.Once,
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
func (b *Daemon) buildKube() error {
	o, cfg, log := &b.o, b.cfg, b.log
	if o.AppsDir == "" || cfg.LeaderElection.Enabled {
		restCfg, err := setup.RestConfig(o.Kubeconfig, cfg, o.userAgent())
		if err != nil {
			return err
		}
		restCfg.Wrap(newKubeRequestMetrics(b.reg).wrap)
		b.restCfg = restCfg
	}
	if o.AppsDir != "" {
		b.files = &watcher.FileSource{Dir: o.AppsDir, Log: log, Metrics: b.watchMetrics}
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
func (b *Daemon) buildKubeSource() error {
	o, cfg, log, restCfg := &b.o, b.cfg, b.log, b.restCfg
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
		ProjectNamespaces: []string{o.ArgoCDNamespace},
		Log:               log,
		Metrics:           b.watchMetrics,
	}}
	return nil
}

// buildRegistries builds the registry side (clients, credentials,
// poller) and the registry webhook receiver.
func (b *Daemon) buildRegistries() error {
	regs, err := setup.NewRegistries(b.cfg, b.baseDir, b.secrets, registry.NewMetrics(b.reg), b.log)
	if err != nil {
		return err
	}
	b.regs = regs
	if b.webhooks, err = newWebhookHandler(b.cfg.Registries.Webhook, regs.Poller, b.reg, b.log); err != nil {
		return err
	}
	return nil
}

// buildImages builds the image reconciler with its tenancy rules and the
// sync windows' timer, and makes it the engine's reconciler.
func (b *Daemon) buildImages() error {
	o, log, engine, regs := &b.o, b.log, b.engine, b.regs
	windowSource := &controller.WindowSource{Engine: engine, Config: engine.Config, Log: log}
	if b.files == nil {
		windowSource.Namespace = o.ArgoCDNamespace
	}
	if o.Once {
		b.tally = &controller.PassTally{}
	}
	images := &controller.ImageReconciler{
		Tally:      b.tally,
		Registry:   regs.Client,
		Registries: regs,
		Poller:     regs.Poller,
		Windows:    windowSource,
		Policies:   &controller.PolicySource{Config: engine.Config, Log: log},
		// One tag list per repository serves the whole first pass,
		// however long it takes (Engine.InFirstPass).
		Queue:   engine,
		DryRun:  o.DryRun,
		Plans:   b.plans,
		Metrics: controller.NewImageMetrics(b.reg),
		Log:     log,
		// Zero is the controller's default.
		PullRequestInterval: o.PullRequestInterval,
	}
	images.Tenancy = &tenancy.Rules{
		Config:      func() *config.Tenancy { return &engine.Config().Tenancy },
		Projects:    controller.EngineView{Engine: engine, ArgoNamespace: o.ArgoCDNamespace, InAppNamespace: b.files != nil},
		Assignments: regs,
	}
	images.Tenancy.LocalRepos = b.files != nil
	if b.files == nil {
		// A missing default project (not yet recreated, not watched, or
		// a wrong --argocd-namespace) admits only Argo CD's own
		// namespace, as the one Argo CD recreates does.
		images.Tenancy.ArgoNamespace = o.ArgoCDNamespace
	}
	winMetrics := controller.NewWindowMetrics(b.reg)
	images.WindowMetrics = winMetrics
	b.timer = &controller.WindowTimer{Windows: windowSource, Engine: engine, Held: images, Metrics: winMetrics, Log: log}
	if b.dyn != nil && !o.DryRun {
		b.timer.Apps = b.dyn
	}
	regs.Poller.Listener = images
	// One tag list per repository serves the whole first pass, however
	// long it takes.
	regs.Poller.Hold = engine
	engine.Reconciler = images
	b.images = images
	return nil
}

// buildLeaderElection gives the engine its Lease when leader election is
// on.
func (b *Daemon) buildLeaderElection() error {
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

// buildServers builds the HTTP servers (metrics, health, pprof, the
// registry webhooks when configured) and makes them listen, so a taken
// port fails the start.
func (b *Daemon) buildServers() error {
	o, log := &b.o, b.log
	b.servers = []*httpserver.Server{
		{Name: "metrics", Addr: o.MetricsAddr, Handler: promhttp.HandlerFor(b.reg, promhttp.HandlerOpts{Registry: b.reg}), Log: log},
		{Name: "health", Addr: o.ProbeAddr, Handler: b.engine.HealthHandler(), Log: log},
		{Name: "pprof", Addr: o.PprofAddr, Handler: pprofHandler(), Log: log},
	}
	if b.webhooks != nil {
		b.servers = append(b.servers, &httpserver.Server{Name: "webhooks", Addr: o.WebhookAddr, Handler: b.webhooks, Log: log})
	}
	for _, s := range b.servers {
		if _, err := s.Listen(); err != nil {
			return err
		}
	}
	return nil
}
