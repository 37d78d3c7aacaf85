package daemon

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/crowsnest-dev/crowsnest/config"
	"github.com/crowsnest-dev/crowsnest/controller/dryrun"
	"github.com/crowsnest-dev/crowsnest/controller/imageupdaters"
	"github.com/crowsnest-dev/crowsnest/internal/setup"
)

// InClusterNamespaceFile holds the pod's namespace; it is the default
// namespace of the leader-election Lease in a cluster, and of crowsnest's
// own state.
const InClusterNamespaceFile = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"

// Options are what `crowsnest run`'s flags say, as plain values. Fields
// that name a config setting are in Overrides: those set win over the
// config file, at start and at every reload.
type Options struct {
	// ConfigPath is the config file, watched for changes; empty runs on
	// the defaults.
	ConfigPath string
	// Kubeconfig is the kubeconfig file; empty is in-cluster or
	// $KUBECONFIG.
	Kubeconfig string
	// AppsDir, when set, is local mode: Applications are read from YAML
	// files in this folder instead of a cluster.
	AppsDir string
	// The HTTP endpoints' addresses; "0" or empty disables one.
	MetricsAddr, ProbeAddr, WebhookAddr, PprofAddr string
	// DryRun decides and reports, and writes and sends nothing; each
	// write-back plan goes to Plans.
	DryRun bool
	// Once runs one full pass, then Run returns (non-nil when anything
	// failed); it needs AppsDir or DryRun.
	Once bool
	// GitCacheDir is where Git write-back keeps its clones.
	GitCacheDir string
	// StateDir keeps what must outlive the process: the journal of
	// notifications sent and not yet recorded and, in local mode, of Git
	// writes not yet announced. Empty disables it.
	StateDir string
	// ArgoCDNamespace is Argo CD's namespace (its repository Secrets and
	// AppProjects); empty is "argocd".
	ArgoCDNamespace string
	// GitSSHKnownHosts is a known_hosts file of SSH Git servers to trust
	// besides Argo CD's.
	GitSSHKnownHosts string
	// ImageUpdaters is how argocd-image-updater 1.x ImageUpdater
	// resources are read: auto (empty), on or off.
	ImageUpdaters string
	// PullRequestInterval is how often the open pull requests are looked
	// at; zero is controller.DefaultPullRequestInterval. End-to-end tests
	// shorten it so a merge is seen in seconds, not minutes.
	PullRequestInterval time.Duration
	// Overrides are the config settings given on the command line.
	Overrides Overrides
	// IgnoredFlags are flags given that have no effect (argocd-image-
	// updater's); each is logged as a warning at start.
	IgnoredFlags []IgnoredFlag
	// Version is crowsnest's version, logged at start and sent in the
	// kube clients' User-Agent.
	Version string

	// Stderr receives the log and, with Once, the pass's summary line;
	// nil is os.Stderr.
	Stderr io.Writer
	// Plans receives the write-back plans under DryRun; nil drops them.
	Plans PlanRecorder
	// Observer, when set, is told of every Event the daemon records on an
	// Application.
	Observer Observer
}

// Overrides are config settings given on the command line; nil leaves
// the config file's (or its default) in force.
type Overrides struct {
	// Namespaces is watch.namespaces; an empty list is every namespace.
	Namespaces         *[]string
	Selector           *string // watch.selector
	LeaderElect        *bool   // leaderElection.enabled
	LeaseNamespace     *string // leaderElection.leaseNamespace
	LeaseName          *string // leaderElection.leaseName
	LogLevel           *string // log.level
	LogFormat          *string // log.format
	Workers            *int    // controller.workers
	KubeQPS            *float64
	KubeBurst          *int
	RegistriesConfFile *string        // registries.confFile
	PollInterval       *time.Duration // registries.pollInterval
	GitAuthorName      *string        // git.author.name
	GitAuthorEmail     *string        // git.author.email
}

// apply sets on c the settings o holds.
func (o *Overrides) apply(c *config.Config) {
	set := func(dst *string, v *string) {
		if v != nil {
			*dst = *v
		}
	}
	if o.Namespaces != nil {
		c.Watch.Namespaces = slices.Clone(*o.Namespaces)
	}
	set(&c.Watch.Selector, o.Selector)
	if o.LeaderElect != nil {
		c.LeaderElection.Enabled = *o.LeaderElect
	}
	set(&c.LeaderElection.LeaseNamespace, o.LeaseNamespace)
	set(&c.LeaderElection.LeaseName, o.LeaseName)
	set(&c.Log.Level, o.LogLevel)
	set(&c.Log.Format, o.LogFormat)
	if o.Workers != nil {
		c.Controller.Workers = *o.Workers
	}
	if o.KubeQPS != nil {
		c.Controller.KubeQPS = *o.KubeQPS
	}
	if o.KubeBurst != nil {
		c.Controller.KubeBurst = *o.KubeBurst
	}
	set(&c.Registries.ConfFile, o.RegistriesConfFile)
	if o.PollInterval != nil {
		c.Registries.PollInterval = config.Duration{Duration: *o.PollInterval}
	}
	set(&c.Git.Author.Name, o.GitAuthorName)
	set(&c.Git.Author.Email, o.GitAuthorEmail)
}

// IgnoredFlag is a flag given that has no effect, and what to use
// instead.
type IgnoredFlag struct {
	Flag    string // without the leading "--"
	Instead string
}

// PlanRecorder receives the dry run's write-back plans. Flush is called
// at the end of a Once pass and returns how many Applications have one
// (a recorder that holds plans until then prints them there).
type PlanRecorder interface {
	dryrun.Recorder
	Flush() int
}

// imageUpdaterModes are the values of Options.ImageUpdaters.
var imageUpdaterModes = []string{imageupdaters.ModeAuto, imageupdaters.ModeOn, imageupdaters.ModeOff}

// check fills the defaults of o and refuses what cannot run.
func (o *Options) check() error {
	if o.Once && o.AppsDir == "" && !o.DryRun {
		return errors.New("--once needs --apps-dir (local mode) or --dry-run")
	}
	if o.ImageUpdaters == "" {
		o.ImageUpdaters = imageupdaters.ModeAuto
	}
	if !slices.Contains(imageUpdaterModes, o.ImageUpdaters) {
		return fmt.Errorf("--imageupdater-resources: %q, want %s", o.ImageUpdaters, strings.Join(imageUpdaterModes, ", "))
	}
	if o.PullRequestInterval < 0 {
		return fmt.Errorf("--pull-request-interval: must not be negative, got %s", o.PullRequestInterval)
	}
	if o.ArgoCDNamespace == "" {
		o.ArgoCDNamespace = "argocd"
	}
	if o.Stderr == nil {
		o.Stderr = os.Stderr
	}
	return nil
}

// baseDir resolves the config's relative paths: the config file's folder.
func (o *Options) baseDir() string {
	if o.ConfigPath == "" {
		return "."
	}
	return filepath.Dir(o.ConfigPath)
}

// effective merges the overrides over cfg and validates the result.
func (o *Options) effective(cfg *config.Config) (*config.Config, error) {
	c := *cfg
	o.Overrides.apply(&c)
	if c.LeaderElection.Enabled && c.LeaderElection.LeaseNamespace == "" {
		if data, err := os.ReadFile(InClusterNamespaceFile); err == nil {
			c.LeaderElection.LeaseNamespace = strings.TrimSpace(string(data))
		}
	}
	if err := c.Validate(); err != nil {
		return nil, fmt.Errorf("flags and config together are invalid (flags name the same fields):\n%w", err)
	}
	// What `config validate` checks beyond parsing is checked here too,
	// so a broken condition or registries.conf fails the start or the
	// reload rather than the first use, and the two commands agree.
	if err := setup.CheckConfig(&c, o.baseDir()); err != nil {
		return nil, err
	}
	return &c, nil
}

// ownNamespace is where crowsnest keeps its state (notification outbox and
// trigger state ConfigMaps): the lease namespace, else the pod's namespace,
// else the Argo CD namespace.
func (o *Options) ownNamespace(cfg *config.Config) string {
	if cfg.LeaderElection.LeaseNamespace != "" {
		return cfg.LeaderElection.LeaseNamespace
	}
	if data, err := os.ReadFile(InClusterNamespaceFile); err == nil {
		if ns := strings.TrimSpace(string(data)); ns != "" {
			return ns
		}
	}
	return o.ArgoCDNamespace
}

// userAgent is what crowsnest's kube clients call themselves.
func (o *Options) userAgent() string { return "crowsnest/" + o.Version }
