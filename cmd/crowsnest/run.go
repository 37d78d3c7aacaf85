package main

import (
	"context"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	crowsnestd "github.com/crowsnest-dev/crowsnest/internal/daemon" // not "daemon": the e2e tests have a type of that name
)

// runOptions are the flags of `crowsnest run`: the daemon's options,
// bound to flags where they are plain values, and the flags that
// override config settings, read into d.Overrides when set.
type runOptions struct {
	d crowsnestd.Options
	// aiu are argocd-image-updater's run flags (aiuflags.go).
	aiu                     crowsnestd.ImageUpdaterFlags
	namespace               []string
	namespaces              []string
	selector                string
	planFormat              string
	leaderElect             bool
	leaderElectionNamespace string
	leaderElectionID        string
	logLevel                string
	logFormat               string
	workers                 int
	kubeQPS                 float64
	kubeBurst               int
}

func newRunCommand() *cobra.Command {
	o := &runOptions{}
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
	f.StringVar(&o.d.ConfigPath, "config", "", "crowsnest config file (YAML, apiVersion crowsnest.dev/v1alpha1); defaults apply without one")
	f.StringVar(&o.d.Kubeconfig, "kubeconfig", "", "path to a kubeconfig; in-cluster config or $KUBECONFIG when empty")
	f.StringSliceVarP(&o.namespace, "namespace", "n", nil, "namespace to watch Applications in (repeatable); all namespaces when none")
	f.StringSliceVar(&o.namespaces, "namespaces", nil, "comma-separated namespaces to watch (same as repeating --namespace)")
	f.StringVarP(&o.selector, "selector", "l", "", "label selector for Applications, e.g. team=payments,tier!=dev")
	f.StringVar(&o.d.AppsDir, "apps-dir", "", "read Applications from YAML files in this folder instead of a cluster (local mode: Git write-backs are real, Kubernetes-mode ones patch an in-memory copy)")
	f.BoolVar(&o.d.Once, "once", false, "with --apps-dir or --dry-run: one full pass (decide, write or plan, notify), then exit; non-zero if anything failed")
	f.StringVar(&o.d.MetricsAddr, "metrics-bind-address", ":8080", `address of the /metrics endpoint; "0" disables it`)
	f.StringVar(&o.d.ProbeAddr, "health-probe-bind-address", ":8081", `address of the /healthz and /readyz endpoints; "0" disables them`)
	f.StringVar(&o.d.PprofAddr, "pprof-bind-address", "0", `address of Go's /debug/pprof/ profiles (for profiling, e.g. 127.0.0.1:6060); "0" disables it`)
	f.BoolVar(&o.d.DryRun, "dry-run", false, "decide and log image updates and notifications; write and send nothing, and print to stdout each Application's write-back plan (see --plan-format)")
	f.StringVar(&o.planFormat, "plan-format", planFormatText, "with --dry-run: text (per Application a '# ' header, then Git's unified diff of each file or the exact JSON patch) or json (one JSON object per Application and line)")
	f.StringVar(&o.d.GitCacheDir, "git-cache-dir", filepath.Join(os.TempDir(), "crowsnest-git"), "where Git write-back keeps its clones")
	f.StringVar(&o.d.StateDir, "state-dir", "", "where crowsnest keeps what must outlive the process (not the pod): the journal of notifications sent and not yet recorded, so a restarted container does not send them again; empty disables it (the shipped manifests use an emptyDir). In local mode it also holds the journal of Git writes not yet announced (default: --git-cache-dir)")
	f.StringVar(&o.d.ArgoCDNamespace, "argocd-namespace", "argocd", "namespace of Argo CD's repository credential Secrets")
	f.StringVar(&o.d.GitSSHKnownHosts, "git-ssh-known-hosts", "", "known_hosts file of SSH Git servers to trust besides Argo CD's argocd-ssh-known-hosts-cm")
	f.StringVar(&o.d.WebhookAddr, "webhook-bind-address", ":8082", `address of the registry webhook receiver (/webhooks/registry/<source>), served when registries.webhook.sources are configured; "0" disables it`)
	f.BoolVar(&o.leaderElect, "leader-elect", false, "elect a leader with a Lease so only one replica reconciles")
	f.StringVar(&o.leaderElectionNamespace, "leader-election-namespace", "", "namespace of the Lease; the pod's namespace in a cluster")
	f.StringVar(&o.leaderElectionID, "leader-election-id", "", `name of the Lease (default "crowsnest")`)
	f.StringVar(&o.logLevel, "log-level", "", "debug, info, warn or error (default info)")
	f.StringVar(&o.logFormat, "log-format", "", "text or json (default text)")
	f.IntVar(&o.workers, "workers", 0, "concurrent reconciles (default 16)")
	f.Float64Var(&o.kubeQPS, "kube-api-qps", 0, "sustained requests per second to the kube-apiserver (default 300)")
	f.IntVar(&o.kubeBurst, "kube-api-burst", 0, "burst of requests to the kube-apiserver (default 1000)")
	f.StringVar(&o.d.ImageUpdaters, "imageupdater-resources", "auto", "read argocd-image-updater 1.x ImageUpdater resources and write their status: auto (when the apiserver serves them), on (fail without their CRD) or off")
	// Hidden: how often open pull requests are looked at is not a knob
	// for users (forges' rate limits); end-to-end tests shorten it.
	f.DurationVar(&o.d.PullRequestInterval, "pull-request-interval", 0, "how often open pull requests are looked at (default 2m)")
	_ = f.MarkHidden("pull-request-interval")
	addAIUFlags(f, &o.aiu)
	return cmd
}

// overrides reads the flags that override config settings and were
// set into o.d.Overrides, then argocd-image-updater's aliases (which
// also set addresses) and the notes of its flags that have no effect.
func (o *runOptions) overrides(cmd *cobra.Command) error {
	f, ov := cmd.Flags(), &o.d.Overrides
	if f.Changed("namespace") || f.Changed("namespaces") {
		ns := append(append([]string(nil), o.namespace...), o.namespaces...)
		ov.Namespaces = &ns
	}
	for name, set := range map[string]func(){
		"selector":                  func() { ov.Selector = &o.selector },
		"leader-elect":              func() { ov.LeaderElect = &o.leaderElect },
		"leader-election-namespace": func() { ov.LeaseNamespace = &o.leaderElectionNamespace },
		"leader-election-id":        func() { ov.LeaseName = &o.leaderElectionID },
		"log-level":                 func() { ov.LogLevel = &o.logLevel },
		"log-format":                func() { ov.LogFormat = &o.logFormat },
		"workers":                   func() { ov.Workers = &o.workers },
		"kube-api-qps":              func() { ov.KubeQPS = &o.kubeQPS },
		"kube-api-burst":            func() { ov.KubeBurst = &o.kubeBurst },
	} {
		if f.Changed(name) {
			set()
		}
	}
	o.aiu.Given = givenFlags(f)
	return o.d.ApplyImageUpdaterFlags(&o.aiu)
}

// run reads the flags into the daemon's options, builds the daemon
// (internal/daemon) and runs it.
func (o *runOptions) run(ctx context.Context, cmd *cobra.Command) error {
	if o.d.Once {
		// A single pass has nobody scraping or probing it, and a second
		// run (or a busy CI host) must not fail on a taken port: its
		// servers listen only where asked to.
		for name, addr := range map[string]*string{"metrics-bind-address": &o.d.MetricsAddr,
			"health-probe-bind-address": &o.d.ProbeAddr, "webhook-bind-address": &o.d.WebhookAddr} {
			if !cmd.Flags().Changed(name) {
				*addr = "0"
			}
		}
	}
	plans, err := newPlanPrinter(cmd.OutOrStdout(), o.planFormat, o.d.Once)
	if err != nil {
		return err
	}
	if err := o.overrides(cmd); err != nil {
		return err
	}
	o.d.Plans, o.d.Stderr, o.d.Version = plans, cmd.ErrOrStderr(), version
	d, err := crowsnestd.New(ctx, o.d)
	if err != nil {
		return err
	}
	return d.Run(ctx)
}
