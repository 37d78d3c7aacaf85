package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/client-go/rest"

	"github.com/crowsnest-dev/crowsnest/config"
	"github.com/crowsnest-dev/crowsnest/controller"
	"github.com/crowsnest-dev/crowsnest/controller/tenancy"
	"github.com/crowsnest-dev/crowsnest/internal/localkube"
	"github.com/crowsnest-dev/crowsnest/internal/setup"
	"github.com/crowsnest-dev/crowsnest/notify"
	"github.com/crowsnest-dev/crowsnest/registry"
	"github.com/crowsnest-dev/crowsnest/writeback/git/repocreds"
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
	local  *localkube.Apps
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
	if err := setup.CheckConfig(&c, baseDir); err != nil {
		return nil, err
	}
	return &c, nil
}

// run checks the flags, builds the daemon's parts in order (each step
// one part, daemonbuilder.go) and runs them.
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
	b := &daemonBuilder{o: o, cmd: cmd, plans: plans}
	defer b.close()
	steps := []func() error{
		b.buildConfig, b.buildLogger, b.buildEngine, b.buildKube, b.buildRegistries, b.buildImages, b.buildWriters,
		func() error { return b.buildNotifier(ctx) },
		b.buildLeaderElection, b.buildReload, b.buildServers,
	}
	for _, step := range steps {
		if err := step(); err != nil {
			return err
		}
	}
	return b.start(ctx)
}

// eventFlushTimeout bounds the writing of pending Events at exit: well
// within a Pod's default 30 s grace period, after the rest has stopped.
const eventFlushTimeout = 10 * time.Second

// restConfig builds the kube client config from --kubeconfig, $KUBECONFIG or
// the in-cluster service account, with the configured rate limits.
func (o *runOptions) restConfig(cfg *config.Config) (*rest.Config, error) {
	return setup.RestConfig(o.kubeconfig, cfg, userAgent())
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

// trustedGitSecret reports whether the operator's config names the Secret
// nsName for Git write-back: a tenancy.credentials gitSecret entry or an
// image policy's git:secret: method.
func trustedGitSecret(cfg *config.Config, nsName string) bool {
	for i := range cfg.Tenancy.Credentials {
		if cfg.Tenancy.Credentials[i].GitSecret == nsName {
			return true
		}
	}
	return policyGitSecret(cfg, nsName)
}

// gitSecretBinding is repocreds.Binding for crowsnest run: an image
// policy's git:secret: goes wherever its Applications write, a
// tenancy.credentials entry's Secret where its repositories say.
type gitSecretBinding struct {
	engine *controller.Engine
	rules  *tenancy.Rules
}

var _ repocreds.Binding = gitSecretBinding{}

// SendsTo implements repocreds.Binding.
func (b gitSecretBinding) SendsTo(namespace, name, repoURL string) bool {
	nsName := namespace + "/" + name
	return policyGitSecret(b.engine.Config(), nsName) || b.rules.GitSecretBound(nsName, repoURL)
}

// policyGitSecret reports whether an image policy, the operator's word,
// names the Secret nsName in its git:secret: method: it goes to whatever
// repository the policy's Applications write to.
func policyGitSecret(cfg *config.Config, nsName string) bool {
	for i := range cfg.ImagePolicies {
		if cfg.ImagePolicies[i].WriteBack.Method == "git:secret:"+nsName {
			return true
		}
	}
	return false
}
