package daemon

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/crowsnest-dev/crowsnest/config/imageupdater"
)

// ImageUpdaterFlags are argocd-image-updater's `run` flags (its 0.x and
// 1.x releases) as given to `crowsnest run`, so that a Deployment's
// arguments keep working when the image is switched. Each one either sets
// what crowsnest's own flag or config field of the same meaning sets (an
// alias, ImageUpdaterAliases), or has no counterpart
// (imageupdater.IgnoredFlags) and is reported at start with the reason
// (ignored, never silently).
type ImageUpdaterFlags struct {
	// Given names every flag given on the command line, crowsnest's own
	// included, in name order; a flag not given has no effect.
	Given []string

	RegistriesConf  string        // registries-conf-path
	LogLevel        string        // loglevel
	LogFormat       string        // logformat
	Interval        time.Duration // interval
	WatchNamespaces string        // watch-namespaces
	LeaderElection  bool          // leader-election
	GitUser         string        // git-commit-user
	GitEmail        string        // git-commit-email
	MatchLabel      string        // match-application-label
	// The worker counts; several given: the largest.
	MaxConcurrentApps, MaxConcurrentReconciles, MaxConcurrency int
	// The ports; 0 disables the server.
	HealthPort, MetricsPort, WebhookPort int
}

// ImageUpdaterAliases names crowsnest's flag or config field for each of
// argocd-image-updater's flags that has one, for messages and the docs.
var ImageUpdaterAliases = map[string]string{
	"registries-conf-path":      "registries.confFile",
	"loglevel":                  "--log-level",
	"logformat":                 "--log-format",
	"interval":                  "registries.pollInterval",
	"max-concurrent-apps":       "--workers",
	"max-concurrent-reconciles": "--workers",
	"max-concurrency":           "--workers",
	"watch-namespaces":          "--namespaces",
	"leader-election":           "--leader-elect",
	"health-port":               "--health-probe-bind-address",
	"metrics-port":              "--metrics-bind-address",
	"webhook-port":              "--webhook-bind-address",
	"git-commit-user":           "git.author.name",
	"git-commit-email":          "git.author.email",
	"match-application-label":   "--selector",
}

// ApplyImageUpdaterFlags sets what the aliases given in f say, over o's
// Overrides and addresses, and puts in o.IgnoredFlags a note for each
// flag given that has no effect (the daemon logs them at start). An
// alias given with the crowsnest flag it stands for is an error: which
// one wins would be a guess.
func (o *Options) ApplyImageUpdaterFlags(f *ImageUpdaterFlags) error {
	s := &aiuSetter{given: f.Given}
	ov := &o.Overrides
	notes := f.applyLogAndPolling(s, ov)
	f.applyWatch(s, ov)
	f.applyPorts(s, o)
	if s.set("git-commit-user") {
		ov.GitAuthorName = &f.GitUser
	}
	if s.set("git-commit-email") {
		ov.GitAuthorEmail = &f.GitEmail
	}
	if s.set("match-application-label") {
		ov.Selector = &f.MatchLabel
	}
	for _, name := range f.Given {
		if why, ok := imageupdater.IgnoredFlags[name]; ok {
			notes = append(notes, IgnoredFlag{Flag: name, Instead: why})
		}
	}
	o.IgnoredFlags = notes
	return errors.Join(s.errs...)
}

// aiuSetter tells which aliases were given, and collects the errors of
// applying them.
type aiuSetter struct {
	given []string
	errs  []error
}

// set reports whether alias was given, alone: given with the crowsnest
// flag it stands for, it is an error.
func (s *aiuSetter) set(alias string) bool {
	if !slices.Contains(s.given, alias) {
		return false
	}
	if own := ImageUpdaterAliases[alias]; strings.HasPrefix(own, "--") && slices.Contains(s.given, strings.TrimPrefix(own, "--")) {
		s.errs = append(s.errs, fmt.Errorf("--%s is argocd-image-updater's name for %s: give one of them", alias, own))
		return false
	}
	return true
}

// applyLogAndPolling applies registries.conf, the log level and format,
// the poll interval and the worker counts.
func (f *ImageUpdaterFlags) applyLogAndPolling(s *aiuSetter, ov *Overrides) (notes []IgnoredFlag) {
	if s.set("registries-conf-path") {
		path, err := filepath.Abs(f.RegistriesConf)
		if err != nil {
			s.errs = append(s.errs, fmt.Errorf("--registries-conf-path: %w", err))
		}
		ov.RegistriesConfFile = &path
	}
	if s.set("loglevel") {
		level := strings.ToLower(f.LogLevel)
		if level == "trace" { // argocd-image-updater's most verbose level
			level = "debug"
		}
		ov.LogLevel = &level
	}
	if s.set("logformat") {
		format := strings.ToLower(f.LogFormat)
		ov.LogFormat = &format
	}
	if s.set("interval") {
		if f.Interval > 0 {
			ov.PollInterval = &f.Interval
		} else {
			notes = append(notes, IgnoredFlag{Flag: "interval", Instead: "--interval=0 (run once): crowsnest runs one pass with --once"})
		}
	}
	counts := map[string]int{"max-concurrent-apps": f.MaxConcurrentApps,
		"max-concurrent-reconciles": f.MaxConcurrentReconciles, "max-concurrency": f.MaxConcurrency}
	workers := 0
	for _, name := range slices.Sorted(maps.Keys(counts)) {
		if s.set(name) {
			workers = max(workers, counts[name]) // several given: the largest
		}
	}
	if workers != 0 {
		ov.Workers = &workers
	}
	return notes
}

// applyWatch applies the watched namespaces and leader election.
func (f *ImageUpdaterFlags) applyWatch(s *aiuSetter, ov *Overrides) {
	if s.set("watch-namespaces") {
		var namespaces []string // "*": every namespace
		switch ns := strings.TrimSpace(f.WatchNamespaces); ns {
		case "*":
		case "":
			// argocd-image-updater's default: its own namespace.
			data, err := os.ReadFile(InClusterNamespaceFile)
			if err != nil {
				s.errs = append(s.errs, errors.New(`--watch-namespaces="" means the pod's own namespace, which is unknown outside a cluster: name the namespaces`))
				break
			}
			namespaces = []string{strings.TrimSpace(string(data))}
		default:
			namespaces = strings.Split(ns, ",")
		}
		ov.Namespaces = &namespaces
	}
	if s.set("leader-election") {
		ov.LeaderElect = &f.LeaderElection
	}
}

// applyPorts applies the health, metrics and webhook ports to o's
// addresses.
func (f *ImageUpdaterFlags) applyPorts(s *aiuSetter, o *Options) {
	addrs := map[string]*string{"health-port": &o.ProbeAddr, "metrics-port": &o.MetricsAddr, "webhook-port": &o.WebhookAddr}
	ports := map[string]int{"health-port": f.HealthPort, "metrics-port": f.MetricsPort, "webhook-port": f.WebhookPort}
	for name, port := range ports {
		if !s.set(name) {
			continue
		}
		switch {
		case port == 0:
			*addrs[name] = "0"
		case port > 0 && port < 65536:
			*addrs[name] = ":" + strconv.Itoa(port)
		default:
			s.errs = append(s.errs, fmt.Errorf("--%s=%d: not a port", name, port))
		}
	}
}
