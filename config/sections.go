package config

import (
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/crowsnest-dev/crowsnest/config/internal/fieldpath"
)

// Watch says which Applications crowsnest watches.
type Watch struct {
	// Namespaces to watch; empty means all namespaces.
	Namespaces []string `yaml:"namespaces"`
	// Selector is a Kubernetes label selector for Applications.
	Selector string `yaml:"selector"`
	// ResyncPeriod replays unchanged Applications to the engine as a safety
	// net; 0 disables it.
	ResyncPeriod *Duration `yaml:"resyncPeriod"`
	// AppProjects enables watching AppProjects (sync windows, subscriptions).
	AppProjects *bool `yaml:"appProjects"`
}

// DefaultResyncPeriod re-checks every Application every ten minutes, like
// Argo CD's own controllers; cheap, since it reads from the cache.
const DefaultResyncPeriod = 10 * time.Minute

// WatchAppProjects reports whether AppProjects are watched (default true).
func (w *Watch) WatchAppProjects() bool { return w.AppProjects == nil || *w.AppProjects }

func (w *Watch) setDefaults() {
	if w.ResyncPeriod == nil {
		w.ResyncPeriod = &Duration{DefaultResyncPeriod}
	}
}

func (w *Watch) validate(path string, errs *fieldErrors) {
	for i, ns := range w.Namespaces {
		if msgs := validation.IsDNS1123Label(ns); len(msgs) > 0 {
			errs.invalid(fieldpath.Index(fieldpath.Join(path, "namespaces"), i), "invalid namespace %q: %s", ns, strings.Join(msgs, "; "))
		}
	}
	if _, err := labels.Parse(w.Selector); err != nil {
		errs.invalid(fieldpath.Join(path, "selector"), "invalid label selector %q: %v", w.Selector, err)
	}
	if w.ResyncPeriod != nil && w.ResyncPeriod.Duration < 0 {
		errs.invalid(fieldpath.Join(path, "resyncPeriod"), "must not be negative, got %s", w.ResyncPeriod)
	}
}

// Controller tunes the sync engine.
type Controller struct {
	// Workers is the number of Applications reconciled at once.
	Workers int `yaml:"workers"`
	// RetryBaseDelay and RetryMaxDelay bound the per-Application backoff
	// after a failed reconcile.
	RetryBaseDelay Duration `yaml:"retryBaseDelay"`
	RetryMaxDelay  Duration `yaml:"retryMaxDelay"`
	// KubeQPS and KubeBurst rate-limit requests to the kube-apiserver.
	KubeQPS   float64 `yaml:"kubeQPS"`
	KubeBurst int     `yaml:"kubeBurst"`
}

// Controller defaults: 1s to 5m backoff retries blips fast and broken apps
// rarely. Workers and QPS come from the benchmark (bench/, S2: 1000
// Applications on a cold start): with 4 workers and client-go's usual
// 50/100 QPS the pass took 55 s, all of it waiting on the client's rate
// limiter; with 16 workers and 300/1000 it is within 1.5x of what the
// apiserver itself takes to patch them (the harness's own unthrottled
// client), and the burst covers a cold start of 1000 Applications. The
// apiserver's priority and fairness still protects it from a larger one.
const (
	DefaultWorkers        = 16
	MaxWorkers            = 256
	DefaultRetryBaseDelay = time.Second
	DefaultRetryMaxDelay  = 5 * time.Minute
	DefaultKubeQPS        = 300
	DefaultKubeBurst      = 1000
)

func (c *Controller) setDefaults() {
	if c.Workers == 0 {
		c.Workers = DefaultWorkers
	}
	c.RetryBaseDelay.orDefault(DefaultRetryBaseDelay)
	c.RetryMaxDelay.orDefault(DefaultRetryMaxDelay)
	if c.KubeQPS == 0 {
		c.KubeQPS = DefaultKubeQPS
	}
	if c.KubeBurst == 0 {
		c.KubeBurst = DefaultKubeBurst
	}
}

func (c *Controller) validate(path string, errs *fieldErrors) {
	if c.Workers < 1 || c.Workers > MaxWorkers {
		errs.invalid(fieldpath.Join(path, "workers"), "must be between 1 and %d, got %d", MaxWorkers, c.Workers)
	}
	if c.RetryBaseDelay.Duration <= 0 {
		errs.invalid(fieldpath.Join(path, "retryBaseDelay"), "must be positive, got %s", c.RetryBaseDelay)
	}
	if c.RetryMaxDelay.Duration < c.RetryBaseDelay.Duration {
		errs.invalid(fieldpath.Join(path, "retryMaxDelay"), "must be at least retryBaseDelay (%s), got %s", c.RetryBaseDelay, c.RetryMaxDelay)
	}
	if c.KubeQPS <= 0 {
		errs.invalid(fieldpath.Join(path, "kubeQPS"), "must be positive, got %v", c.KubeQPS)
	}
	if c.KubeBurst < 1 {
		errs.invalid(fieldpath.Join(path, "kubeBurst"), "must be at least 1, got %d", c.KubeBurst)
	}
}

// LeaderElection makes only one replica act, through a coordination.k8s.io Lease.
type LeaderElection struct {
	Enabled        bool     `yaml:"enabled"`
	LeaseName      string   `yaml:"leaseName"`
	LeaseNamespace string   `yaml:"leaseNamespace"`
	LeaseDuration  Duration `yaml:"leaseDuration"`
	RenewDeadline  Duration `yaml:"renewDeadline"`
	RetryPeriod    Duration `yaml:"retryPeriod"`
}

// Leader election defaults, kube-controller-manager's: a dead leader is
// replaced within about 15 s; renewals ride out apiserver hiccups.
const (
	DefaultLeaseName     = "crowsnest"
	DefaultLeaseDuration = 15 * time.Second
	DefaultRenewDeadline = 10 * time.Second
	DefaultRetryPeriod   = 2 * time.Second
)

func (l *LeaderElection) setDefaults() {
	if l.LeaseName == "" {
		l.LeaseName = DefaultLeaseName
	}
	l.LeaseDuration.orDefault(DefaultLeaseDuration)
	l.RenewDeadline.orDefault(DefaultRenewDeadline)
	l.RetryPeriod.orDefault(DefaultRetryPeriod)
}

func (l *LeaderElection) validate(path string, errs *fieldErrors) {
	if msgs := validation.IsDNS1123Subdomain(l.LeaseName); len(msgs) > 0 {
		errs.invalid(fieldpath.Join(path, "leaseName"), "invalid name %q: %s", l.LeaseName, strings.Join(msgs, "; "))
	}
	if l.Enabled && l.LeaseNamespace == "" {
		errs.invalid(fieldpath.Join(path, "leaseNamespace"), "required when leaderElection.enabled is true")
	}
	if l.LeaseNamespace != "" {
		if msgs := validation.IsDNS1123Label(l.LeaseNamespace); len(msgs) > 0 {
			errs.invalid(fieldpath.Join(path, "leaseNamespace"), "invalid namespace %q: %s", l.LeaseNamespace, strings.Join(msgs, "; "))
		}
	}
	for _, f := range []struct {
		name string
		d    Duration
	}{{"leaseDuration", l.LeaseDuration}, {"renewDeadline", l.RenewDeadline}, {"retryPeriod", l.RetryPeriod}} {
		if f.d.Duration <= 0 {
			errs.invalid(fieldpath.Join(path, f.name), "must be positive, got %s", f.d)
		}
	}
	if l.RenewDeadline.Duration >= l.LeaseDuration.Duration {
		errs.invalid(fieldpath.Join(path, "renewDeadline"), "must be less than leaseDuration (%s), got %s", l.LeaseDuration, l.RenewDeadline)
	}
	// client-go requires renewDeadline > retryPeriod * 1.2 (its jitter).
	if float64(l.RenewDeadline.Duration) <= 1.2*float64(l.RetryPeriod.Duration) {
		errs.invalid(fieldpath.Join(path, "retryPeriod"), "must be less than renewDeadline/1.2 (%s), got %s",
			time.Duration(float64(l.RenewDeadline.Duration)/1.2), l.RetryPeriod)
	}
}

// Log configures the log output.
type Log struct {
	Level  string `yaml:"level"`
	Format string `yaml:"format"`
}

var (
	logLevels  = []string{"debug", "info", "warn", "error"}
	logFormats = []string{"text", "json"}
)

func (l *Log) setDefaults() {
	if l.Level == "" {
		l.Level = "info"
	}
	if l.Format == "" {
		l.Format = "text"
	}
}

func (l *Log) validate(path string, errs *fieldErrors) {
	if !slices.Contains(logLevels, strings.ToLower(l.Level)) {
		errs.invalid(fieldpath.Join(path, "level"), "unsupported value %q, want one of %s", l.Level, strings.Join(logLevels, ", "))
	}
	if !slices.Contains(logFormats, l.Format) {
		errs.invalid(fieldpath.Join(path, "format"), "unsupported value %q, want one of %s", l.Format, strings.Join(logFormats, ", "))
	}
}
