package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/flowcontrol"

	"github.com/crowsnest-dev/crowsnest/config"
	"github.com/crowsnest-dev/crowsnest/controller"
	"github.com/crowsnest-dev/crowsnest/controller/tenancy"
	"github.com/crowsnest-dev/crowsnest/internal/httpserver"
	"github.com/crowsnest-dev/crowsnest/internal/kubeevents"
	"github.com/crowsnest-dev/crowsnest/internal/logging"
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

// inClusterNamespaceFile holds the pod's namespace; it is the default
// namespace of the leader-election Lease in a cluster.
const inClusterNamespaceFile = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"

// runOptions are the flags of `crowsnest run`. Flags that are set win over
// the config file; the rest come from the file or its defaults.
type runOptions struct {
	// aiu are argocd-image-updater's run flags (aiuflags.go); aiuNotes
	// the ones given that have no effect, logged at start.
	aiu                     aiuFlags
	aiuNotes                []aiuNote
	configPath              string
	kubeconfig              string
	namespace               []string
	namespaces              []string
	selector                string
	appsDir                 string
	metricsAddr             string
	probeAddr               string
	webhookAddr             string
	pprofAddr               string
	dryRun                  bool
	planFormat              string
	gitCacheDir             string
	stateDir                string
	argocdNamespace         string
	gitSSHKnownHosts        string
	leaderElect             bool
	leaderElectionNamespace string
	leaderElectionID        string
	logLevel                string
	logFormat               string
	workers                 int
	kubeQPS                 float64
	kubeBurst               int
	once                    bool
	imageUpdaters           string

	// For `crowsnest demo`, which runs this same code: onEvent sees each
	// local-mode Event, started gets the parts once they are built.
	onEvent func(AppEvent)
	started func(*runParts)
}

// runParts are the pieces of a running daemon that the demo drives and
// reports on.
type runParts struct {
	engine *controller.Engine
	poller *registry.Poller
	local  *localApps
	outbox *notify.Outbox
	wait   *passWaiter
}

func newRunCommand() *cobra.Command { return newRunCommandWith(&runOptions{}) }

// newRunCommandWith is `crowsnest run` filling o; the demo runs it with
// its hooks set.
func newRunCommandWith(o *runOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "run",
		Short: "Run the crowsnest daemon",
		Long: `Run watches Argo CD Applications (in a cluster, or in a folder with --apps-dir)
and reconciles each one on the sync engine. Metrics are served on
--metrics-bind-address (/metrics), probes on --health-probe-bind-address
(/healthz, /readyz). The config file given with --config is reloaded when it
changes; an invalid new version is rejected and the old one stays in force.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return o.run(cmd.Context(), cmd)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.configPath, "config", "", "crowsnest config file (YAML, apiVersion crowsnest.dev/v1alpha1); defaults apply without one")
	f.StringVar(&o.kubeconfig, "kubeconfig", "", "path to a kubeconfig; in-cluster config or $KUBECONFIG when empty")
	f.StringSliceVarP(&o.namespace, "namespace", "n", nil, "namespace to watch Applications in (repeatable); all namespaces when none")
	f.StringSliceVar(&o.namespaces, "namespaces", nil, "comma-separated namespaces to watch (same as repeating --namespace)")
	f.StringVarP(&o.selector, "selector", "l", "", "label selector for Applications, e.g. team=payments,tier!=dev")
	f.StringVar(&o.appsDir, "apps-dir", "", "read Applications from YAML files in this folder instead of a cluster (local mode: Git write-backs are real, Kubernetes-mode ones patch an in-memory copy)")
	f.BoolVar(&o.once, "once", false, "with --apps-dir or --dry-run: one full pass (decide, write or plan, notify), then exit; non-zero if anything failed")
	f.StringVar(&o.metricsAddr, "metrics-bind-address", ":8080", `address of the /metrics endpoint; "0" disables it`)
	f.StringVar(&o.probeAddr, "health-probe-bind-address", ":8081", `address of the /healthz and /readyz endpoints; "0" disables them`)
	f.StringVar(&o.pprofAddr, "pprof-bind-address", "0", `address of Go's /debug/pprof/ profiles (for profiling, e.g. 127.0.0.1:6060); "0" disables it`)
	f.BoolVar(&o.dryRun, "dry-run", false, "decide and log image updates and notifications; write and send nothing, and print to stdout each Application's write-back plan (see --plan-format)")
	f.StringVar(&o.planFormat, "plan-format", planFormatText, "with --dry-run: text (per Application a '# ' header, then Git's unified diff of each file or the exact JSON patch) or json (one JSON object per Application and line)")
	f.StringVar(&o.gitCacheDir, "git-cache-dir", filepath.Join(os.TempDir(), "crowsnest-git"), "where Git write-back keeps its clones")
	f.StringVar(&o.stateDir, "state-dir", "", "where crowsnest keeps what must outlive the process (not the pod): the journal of notifications sent and not yet recorded, so a restarted container does not send them again; empty disables it (the shipped manifests use an emptyDir). In local mode it also holds the journal of Git writes not yet announced (default: --git-cache-dir)")
	f.StringVar(&o.argocdNamespace, "argocd-namespace", "argocd", "namespace of Argo CD's repository credential Secrets")
	f.StringVar(&o.gitSSHKnownHosts, "git-ssh-known-hosts", "", "known_hosts file of SSH Git servers to trust besides Argo CD's argocd-ssh-known-hosts-cm")
	f.StringVar(&o.webhookAddr, "webhook-bind-address", ":8082", `address of the registry webhook receiver (/webhooks/registry/<source>), served when registries.webhook.sources are configured; "0" disables it`)
	f.BoolVar(&o.leaderElect, "leader-elect", false, "elect a leader with a Lease so only one replica reconciles")
	f.StringVar(&o.leaderElectionNamespace, "leader-election-namespace", "", "namespace of the Lease; the pod's namespace in a cluster")
	f.StringVar(&o.leaderElectionID, "leader-election-id", "", `name of the Lease (default "crowsnest")`)
	f.StringVar(&o.logLevel, "log-level", "", "debug, info, warn or error (default info)")
	f.StringVar(&o.logFormat, "log-format", "", "text or json (default text)")
	f.IntVar(&o.workers, "workers", 0, "concurrent reconciles (default 16)")
	f.Float64Var(&o.kubeQPS, "kube-api-qps", 0, "sustained requests per second to the kube-apiserver (default 300)")
	f.IntVar(&o.kubeBurst, "kube-api-burst", 0, "burst of requests to the kube-apiserver (default 1000)")
	f.StringVar(&o.imageUpdaters, "imageupdater-resources", "auto", "read argocd-image-updater 1.x ImageUpdater resources and write their status: auto (when the apiserver serves them), on (fail without their CRD) or off")
	o.aiu.add(f)
	return cmd
}

// effective merges the flags that were set over cfg and validates the result.
func (o *runOptions) effective(cmd *cobra.Command, cfg *config.Config) (*config.Config, error) {
	c := *cfg
	f := cmd.Flags()
	if f.Changed("namespace") || f.Changed("namespaces") {
		c.Watch.Namespaces = append(append([]string(nil), o.namespace...), o.namespaces...)
	}
	if f.Changed("selector") {
		c.Watch.Selector = o.selector
	}
	if f.Changed("leader-elect") {
		c.LeaderElection.Enabled = o.leaderElect
	}
	if f.Changed("leader-election-namespace") {
		c.LeaderElection.LeaseNamespace = o.leaderElectionNamespace
	}
	if c.LeaderElection.Enabled && c.LeaderElection.LeaseNamespace == "" {
		if data, err := os.ReadFile(inClusterNamespaceFile); err == nil {
			c.LeaderElection.LeaseNamespace = strings.TrimSpace(string(data))
		}
	}
	if f.Changed("leader-election-id") {
		c.LeaderElection.LeaseName = o.leaderElectionID
	}
	if f.Changed("log-level") {
		c.Log.Level = o.logLevel
	}
	if f.Changed("log-format") {
		c.Log.Format = o.logFormat
	}
	if f.Changed("workers") {
		c.Controller.Workers = o.workers
	}
	if f.Changed("kube-api-qps") {
		c.Controller.KubeQPS = o.kubeQPS
	}
	if f.Changed("kube-api-burst") {
		c.Controller.KubeBurst = o.kubeBurst
	}
	notes, err := o.aiu.apply(cmd, o, &c)
	if err != nil {
		return nil, err
	}
	o.aiuNotes = notes
	if err := c.Validate(); err != nil {
		return nil, fmt.Errorf("flags and config together are invalid (flags name the same fields):\n%w", err)
	}
	// What `config validate` checks beyond parsing is checked here too,
	// so a broken condition or registries.conf fails the start or the
	// reload rather than the first use, and the two commands agree.
	baseDir := "."
	if o.configPath != "" {
		baseDir = filepath.Dir(o.configPath)
	}
	if err := checkConfig(&c, baseDir); err != nil {
		return nil, err
	}
	return &c, nil
}

func (o *runOptions) run(ctx context.Context, cmd *cobra.Command) error {
	if o.once && o.appsDir == "" && !o.dryRun {
		return errors.New("--once needs --apps-dir (local mode) or --dry-run")
	}
	if err := checkImageUpdaterMode(o.imageUpdaters); err != nil {
		return err
	}
	if o.once {
		// A single pass has nobody scraping or probing it, and a second
		// run (or a busy CI host) must not fail on a taken port: its
		// servers listen only where asked to.
		for name, addr := range map[string]*string{"metrics-bind-address": &o.metricsAddr,
			"health-probe-bind-address": &o.probeAddr, "webhook-bind-address": &o.webhookAddr} {
			if !cmd.Flags().Changed(name) {
				*addr = "0"
			}
		}
	}
	plans, err := newPlanPrinter(cmd.OutOrStdout(), o.planFormat, o.once)
	if err != nil {
		return err
	}
	var (
		cfgWatcher *config.Watcher
		fileCfg    = config.Default()
		reg        = prometheus.NewRegistry()
	)
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	if o.configPath != "" {
		cfgWatcher = &config.Watcher{Path: o.configPath, Metrics: config.NewMetrics(reg)}
		c, err := cfgWatcher.Load()
		if err != nil {
			return err
		}
		fileCfg = c
	}
	cfg, err := o.effective(cmd, fileCfg)
	if err != nil {
		return err
	}
	if o.gitSSHKnownHosts != "" {
		if _, err := gitwb.ReadKnownHostsFile(o.gitSSHKnownHosts); err != nil {
			return fmt.Errorf("--git-ssh-known-hosts: %w", err)
		}
	}
	level := &slog.LevelVar{}
	lvl, err := logging.ParseLevel(cfg.Log.Level)
	if err != nil {
		return err
	}
	level.Set(lvl)
	log, err := logging.New(cmd.ErrOrStderr(), cfg.Log.Format, level)
	if err != nil {
		return err
	}
	logging.RouteKlog(log)
	if cfgWatcher != nil {
		cfgWatcher.Log = log
	}

	// The effective config in force; reloads replace it.
	var current sync.Mutex
	effectiveCfg := cfg
	engine := &controller.Engine{
		Workers:        cfg.Controller.Workers,
		RetryBaseDelay: cfg.Controller.RetryBaseDelay.Duration,
		RetryMaxDelay:  cfg.Controller.RetryMaxDelay.Duration,
		OnePass:        o.once,
		Metrics:        controller.NewMetrics(reg),
		Log:            log,
		Config: func() *config.Config {
			current.Lock()
			defer current.Unlock()
			return effectiveCfg
		},
	}
	watchMetrics := watcher.NewMetrics(reg)

	var restCfg *rest.Config
	if o.appsDir == "" || cfg.LeaderElection.Enabled {
		if restCfg, err = o.restConfig(cfg); err != nil {
			return err
		}
		restCfg.Wrap(newKubeRequestMetrics(reg).wrap)
	}
	// dyn is set in cluster mode only: Applications read from files are
	// never written to a cluster.
	var (
		dyn   dynamic.Interface
		meta  *kube.MetaPatcher
		files *watcher.FileSource
	)
	if o.appsDir != "" {
		files = &watcher.FileSource{Dir: o.appsDir, Log: log, Metrics: watchMetrics}
		engine.Sources = []controller.Source{files}
	} else {
		if _, err := labels.Parse(cfg.Watch.Selector); err != nil {
			return fmt.Errorf("--selector: %w", err)
		}
		// Reads and patches of Applications share one rate limiter; the
		// patches' answers carry metadata only.
		appsCfg := rest.CopyConfig(restCfg)
		appsCfg.RateLimiter = flowcontrol.NewTokenBucketRateLimiter(restCfg.QPS, restCfg.Burst)
		d, err := dynamic.NewForConfig(appsCfg)
		if err != nil {
			return fmt.Errorf("building kube client: %w", err)
		}
		if meta, err = kube.MetadataOnlyClient(appsCfg); err != nil {
			return err
		}
		dyn = d
		engine.Sources = []controller.Source{&watcher.KubeSource{
			Client:       dyn,
			Config:       appsCfg,
			Namespaces:   cfg.Watch.Namespaces,
			Selector:     cfg.Watch.Selector,
			ResyncPeriod: cfg.Watch.ResyncPeriod.Duration,
			Projects:     cfg.Watch.WatchAppProjects(),
			// Argo CD reads AppProjects in its own namespace only.
			ProjectNamespaces: projectNamespaces(cfg.Watch.Namespaces, o.argocdNamespace),
			Log:               log,
			Metrics:           watchMetrics,
		}}
	}
	var (
		clientset kubernetes.Interface
		secrets   creds.SecretGetter
	)
	if restCfg != nil {
		cs, err := kubernetes.NewForConfig(restCfg)
		if err != nil {
			return fmt.Errorf("building kube client: %w", err)
		}
		clientset, secrets = cs, creds.KubeSecrets{Client: cs}
	}
	baseDir := "."
	if o.configPath != "" {
		baseDir = filepath.Dir(o.configPath)
	}
	regs, err := newRegistries(cfg, baseDir, secrets, registry.NewMetrics(reg), log)
	if err != nil {
		return err
	}
	webhooks, err := newWebhookHandler(cfg.Registries.Webhook, regs.poller, reg, log)
	if err != nil {
		return err
	}
	windowSource := &controller.WindowSource{Engine: engine, Config: engine.Config, Log: log}
	var tally *controller.PassTally
	if o.once {
		tally = &controller.PassTally{}
	}
	images := &controller.ImageReconciler{
		Tally:         tally,
		Registry:      regs.client,
		RegistryFor:   regs.forPullSecret,
		Names:         regs.qualify,
		Poller:        regs.poller,
		Windows:       windowSource.Set,
		BrokenProject: windowSource.Broken,
		Policies:      (&controller.PolicySource{Config: engine.Config, Log: log}).Policies,
		Enqueue:       engine.Enqueue,
		DryRun:        o.dryRun,
		Plans:         plans,
		Metrics:       controller.NewImageMetrics(reg),
		Log:           log,
	}
	images.Tenancy = &tenancy.Rules{
		Config:   func() *config.Tenancy { return &engine.Config().Tenancy },
		Project:  controller.ArgoProject(engine, o.argocdNamespace, files != nil),
		Assigned: regs.assigned,
	}
	images.Tenancy.LocalRepos = files != nil
	if files == nil && !cfg.Watch.WatchAppProjects() {
		// Without AppProjects nothing says which namespaces the default
		// project admits: only Argo CD's own, as the one it recreates.
		images.Tenancy.ArgoNamespace = o.argocdNamespace
	}
	winMetrics := controller.NewWindowMetrics(reg)
	images.WindowMetrics = winMetrics
	timer := &controller.WindowTimer{Windows: images.Windows, Engine: engine, Pending: images.Pending, Metrics: winMetrics, Log: log}
	if dyn != nil && !o.dryRun {
		timer.Apps = dyn
	}
	regs.poller.OnChange = images.RepoChanged
	// One tag list per repository serves the whole first pass, however
	// long it takes.
	images.FirstPass, regs.poller.Hold = engine.InFirstPass, engine.InFirstPass
	engine.Reconciler = images
	var (
		local      *localApps
		localLogs  *logEvents
		gitMetrics = gitwb.NewMetrics(reg)
		gw         *gitwb.Writer
	)
	if files != nil {
		local = newLocalApps(files, log)
		localLogs = &logEvents{log: log, onEvent: o.onEvent}
		images.Writer, images.Events = local, controller.RedactEvents(localLogs)
		if gw, err = newGitWriter(cfg, o.gitCacheDir, envGitCredentials(), gitMetrics, log); err != nil {
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
	}
	if dyn != nil {
		images.Writer = &kube.Writer{Client: dyn, MetaClient: meta, Log: log}
		// Events go through a client of their own, with a rate limiter of
		// the same size as the main one: a burst of Events never delays
		// or throttles write-backs, and keeps pace with them. The sink
		// never drops one without counting and logging it.
		eventCfg := rest.CopyConfig(restCfg)
		eventCfg.RateLimiter = flowcontrol.NewTokenBucketRateLimiter(restCfg.QPS, restCfg.Burst)
		eventClient, err := kubernetes.NewForConfig(eventCfg)
		if err != nil {
			return fmt.Errorf("kube client for Events: %w", err)
		}
		events := &kubeevents.Sink{Client: eventClient.CoreV1(), Source: corev1.EventSource{Component: "crowsnest"},
			Metrics: kubeevents.NewMetrics(reg), Log: log}
		events.Start()
		defer events.Shutdown(eventFlushTimeout)
		images.Events = controller.RedactEvents(events)
		if o.once { // --dry-run --once: Warnings count as in local mode
			localLogs = &logEvents{log: slog.New(slog.DiscardHandler)}
			images.Events = teeEvents{images.Events, localLogs}
		}
		images.GitCredentials = &repocreds.ArgoCD{Client: clientset, Namespace: o.argocdNamespace, KnownHostsFile: o.gitSSHKnownHosts,
			Trusted: func(ns, name string) bool { return trustedGitSecret(engine.Config(), ns+"/"+name) }}
		if gw, err = newGitWriter(cfg, o.gitCacheDir, images.GitCredentials, gitMetrics, log); err != nil {
			return err
		}
		images.Journal = &journal.ConfigMaps{Client: clientset, Namespace: o.ownNamespace(cfg)}
	}
	if gw != nil {
		images.Git = &collect.Batcher{
			Writer:  gw,
			Tally:   tally,
			Busy:    func() bool { return !engine.Idle() },
			Enqueue: engine.EnqueueAfter,
			Events:  images.Events,
			Metrics: images.Metrics,
			Log:     log,
		}
		images.Git.OnUnchanged, images.Git.OnAnnounced = images.GitUnchanged, images.GitAnnounced
		if dyn != nil && !o.dryRun {
			refresher := &controller.ArgoRefresher{Client: dyn, Mode: func() string { return engine.Config().Git.Refresh }}
			images.Git.Refresh = refresher.Refresh
		}
	}
	// Notifications: every observed transition goes to the notifier in
	// order; only the leader evaluates and delivers.
	var notifyClient kubernetes.Interface
	if dyn != nil {
		notifyClient = clientset
	}
	notifier, outbox, err := newNotifications(ctx, cfg, notifyClient, o.ownNamespace(cfg), o.dryRun, reg, log)
	if err != nil {
		return err
	}
	if o.stateDir != "" && !o.dryRun {
		if outbox.Journal, err = notify.OpenJournal(o.stateDir, log); err != nil {
			return fmt.Errorf("--state-dir: %w", err)
		}
		defer func() { _ = outbox.Journal.Close() }()
	}
	notifier.Synced = controller.SourcesSynced(engine.Sources)
	notifier.Project = controller.EngineProject(engine)
	if gw != nil {
		// repo.GetCommitMetadata / GetAppDetails read through write-back's
		// Writer: its clone locks are per Writer.
		notifier.Repo = &pipeline.Repo{Git: gw, Check: images.Tenancy.CheckRepository}
	}
	engine.Transitions = notifier.OnAppEvent
	images.Notify, timer.Notify = notifier.OnEvent, notifier.OnEvent
	images.Announces = notifier.Announces
	if images.Git != nil {
		images.Git.Notify, images.Git.App = notifier.OnEvent, engine.App
	}
	if cfg.LeaderElection.Enabled {
		cs := clientset
		engine.LeaderElection = &controller.LeaderElection{
			Client:        cs,
			Namespace:     cfg.LeaderElection.LeaseNamespace,
			Name:          cfg.LeaderElection.LeaseName,
			LeaseDuration: cfg.LeaderElection.LeaseDuration.Duration,
			RenewDeadline: cfg.LeaderElection.RenewDeadline.Duration,
			RetryPeriod:   cfg.LeaderElection.RetryPeriod.Duration,
		}
	}
	if cfgWatcher != nil {
		// Compiling triggers and policies is part of accepting a version,
		// so one that does not compile is counted and logged as rejected.
		cfgWatcher.Accept = func(next *config.Config) error {
			_, err := o.effective(cmd, next)
			return err
		}
		cfgWatcher.OnChange = func(_, next *config.Config) {
			eff, err := o.effective(cmd, next)
			if err != nil {
				log.Error("config reload rejected", "path", o.configPath, "error", err)
				return
			}
			if l, err := logging.ParseLevel(eff.Log.Level); err == nil {
				level.Set(l)
			}
			current.Lock()
			prev := effectiveCfg
			effectiveCfg = eff
			current.Unlock()
			if err := regs.reload(eff, baseDir); err != nil {
				log.Error("registries reload failed; the previous registry settings stay in force", "error", err)
			}
			if err := notifier.Apply(eff); err != nil {
				log.Error("notifications reload rejected; the previous notifications stay in force", "error", err)
			}
			timer.Wake()
			warnRestartOnly(log, prev, eff)
			log.Info("config reloaded", "path", o.configPath)
			engine.RequeueAll()
		}
	}

	servers := []*httpserver.Server{
		{Name: "metrics", Addr: o.metricsAddr, Handler: promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}), Log: log},
		{Name: "health", Addr: o.probeAddr, Handler: engine.HealthHandler(), Log: log},
		{Name: "pprof", Addr: o.pprofAddr, Handler: pprofHandler(), Log: log},
	}
	if webhooks != nil {
		servers = append(servers, &httpserver.Server{Name: "webhooks", Addr: o.webhookAddr, Handler: webhooks, Log: log})
	}
	for _, s := range servers {
		if _, err := s.Listen(); err != nil {
			return err
		}
	}
	logAIUNotes(log, o.aiuNotes)
	log.Info("crowsnest starting", "version", version, "namespaces", strings.Join(cfg.Watch.Namespaces, ","),
		"selector", cfg.Watch.Selector, "appsDir", o.appsDir, "leaderElect", cfg.LeaderElection.Enabled)

	tasks := []func(context.Context) error{engine.Run, regs.poller.Start, timer.Start,
		controller.WhenLeading(engine, outbox.Start), controller.WhenLeading(engine, notifier.Start)}
	if dyn != nil {
		tasks = append(tasks, wireImageUpdaters(o.imageUpdaters, dyn, clientset.Discovery(), cfg.Watch.Namespaces,
			engine, images, o.dryRun, reg, log)...)
	}
	waiter := &passWaiter{engine: engine, git: images.Git, outbox: outbox, settle: 500 * time.Millisecond}
	if o.once {
		tasks = append(tasks, func(ctx context.Context) error {
			if waiter.wait(ctx) != nil {
				return ctx.Err() // stopped from outside before the pass ended
			}
			if o.dryRun {
				log.Info("dry run: plans printed", "applications", plans.Flush())
			}
			var problems []watcher.FileProblem
			if files != nil {
				problems = files.Problems()
			}
			failed := localLogs.Warnings() + deadLetters(ctx, outbox) + len(problems)
			summary := tally.Summary()
			fmt.Fprintf(cmd.ErrOrStderr(), "crowsnest: one pass: %s\n", summary)
			if failed > 0 {
				return fmt.Errorf("one pass finished with %d failure(s); see the warnings above%s", failed, describeFileProblems(problems))
			}
			log.Info("one pass finished", "applications", engine.AppCount(), "updated", summary.Updated,
				"upToDate", summary.UpToDate, "held", summary.Held)
			return nil
		})
	}
	if o.started != nil {
		o.started(&runParts{engine: engine, poller: regs.poller, local: local, outbox: outbox, wait: waiter})
	}
	if images.Git != nil {
		tasks = append(tasks, images.Git.Start)
	}
	for _, s := range servers {
		tasks = append(tasks, s.Serve)
	}
	if cfgWatcher != nil {
		tasks = append(tasks, cfgWatcher.Start)
	}
	err = runAll(ctx, tasks)
	if errors.Is(err, controller.ErrLeadershipLost) {
		log.Error("leadership lost; exiting so a fresh process can campaign again")
	}
	return err
}

// eventFlushTimeout bounds the writing of pending Events at exit: well
// within a Pod's default 30 s grace period, after the rest has stopped.
const eventFlushTimeout = 10 * time.Second

// restConfig builds the kube client config from --kubeconfig, $KUBECONFIG or
// the in-cluster service account, with the configured rate limits.
func (o *runOptions) restConfig(cfg *config.Config) (*rest.Config, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = o.kubeconfig
	rc, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("loading kube config (--kubeconfig, $KUBECONFIG or in-cluster): %w", err)
	}
	rc.QPS = float32(cfg.Controller.KubeQPS)
	rc.Burst = cfg.Controller.KubeBurst
	rc.UserAgent = "crowsnest/" + version
	// Built-in kinds (Events, ConfigMaps, Secrets, Leases) travel as
	// protobuf, as Kubernetes' own controllers send them: cheaper to
	// encode and decode than JSON on both ends, and a cold start sends an
	// Event per update. Clients of Applications (dynamic.ConfigFor) speak
	// JSON whatever this says; custom resources have no protobuf.
	rc.ContentType = runtime.ContentTypeProtobuf
	rc.AcceptContentTypes = runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON
	return rc, nil
}

// warnRestartOnly logs settings that a reload cannot apply to a running
// process: the informers, workers and lease are built once at start.
func warnRestartOnly(log *slog.Logger, prev, next *config.Config) {
	changed := func(field string, a, b any) {
		if !reflect.DeepEqual(a, b) {
			log.Warn("config change takes effect after a restart", "field", field)
		}
	}
	changed("watch", prev.Watch, next.Watch)
	changed("controller.workers", prev.Controller.Workers, next.Controller.Workers)
	changed("controller.retryBaseDelay", prev.Controller.RetryBaseDelay, next.Controller.RetryBaseDelay)
	changed("controller.retryMaxDelay", prev.Controller.RetryMaxDelay, next.Controller.RetryMaxDelay)
	changed("controller.kubeQPS", prev.Controller.KubeQPS, next.Controller.KubeQPS)
	changed("controller.kubeBurst", prev.Controller.KubeBurst, next.Controller.KubeBurst)
	changed("leaderElection", prev.LeaderElection, next.LeaderElection)
	changed("git", prev.Git, next.Git)
	changed("log.format", prev.Log.Format, next.Log.Format)
	changed("registries.pollInterval", prev.Registries.PollInterval, next.Registries.PollInterval)
	changed("registries.tagCacheTTL", prev.Registries.TagCacheTTL, next.Registries.TagCacheTTL)
	changed("registries.metadataCacheSize", prev.Registries.MetadataCacheSize, next.Registries.MetadataCacheSize)
	changed("registries.requestTimeout", prev.Registries.RequestTimeout, next.Registries.RequestTimeout)
	changed("registries.webhook", prev.Registries.Webhook, next.Registries.Webhook)
}

// runAll runs tasks until ctx ends or one fails; then it cancels the rest
// and returns the first error.
func runAll(ctx context.Context, tasks []func(context.Context) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		wg    sync.WaitGroup
		once  sync.Once
		first error
	)
	for _, task := range tasks {
		wg.Go(func() {
			err := task(ctx)
			if err != nil {
				once.Do(func() { first = err })
			}
			// Any task ending (the engine losing its lease, a server failing)
			// ends the process.
			cancel()
		})
	}
	wg.Wait()
	return first
}

// ownNamespace is where crowsnest keeps its state (notification outbox and
// trigger state ConfigMaps): the lease namespace, else the pod's namespace,
// else the Argo CD namespace.
func (o *runOptions) ownNamespace(cfg *config.Config) string {
	if cfg.LeaderElection.LeaseNamespace != "" {
		return cfg.LeaderElection.LeaseNamespace
	}
	if data, err := os.ReadFile(inClusterNamespaceFile); err == nil {
		if ns := strings.TrimSpace(string(data)); ns != "" {
			return ns
		}
	}
	return o.argocdNamespace
}

// projectNamespaces is where AppProjects are watched: every namespace
// when Applications are, else theirs and Argo CD's, whose projects are
// the ones Argo CD (and the tenancy rules) go by.
func projectNamespaces(appNamespaces []string, argocdNamespace string) []string {
	if len(appNamespaces) == 0 || slices.Contains(appNamespaces, argocdNamespace) {
		return nil
	}
	return append(slices.Clone(appNamespaces), argocdNamespace)
}

// trustedGitSecret reports whether the operator's config names the Secret
// nsName for Git write-back: a tenancy.credentials gitSecret entry or an
// image policy's git:secret: method.
func trustedGitSecret(cfg *config.Config, nsName string) bool {
	for i := range cfg.Tenancy.Credentials {
		if cfg.Tenancy.Credentials[i].GitSecret == nsName {
			return true
		}
	}
	for i := range cfg.ImagePolicies {
		if cfg.ImagePolicies[i].WriteBack.Method == "git:secret:"+nsName {
			return true
		}
	}
	return false
}
