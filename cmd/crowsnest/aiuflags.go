package main

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

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	crowsnestd "github.com/crowsnest-dev/crowsnest/internal/daemon" // not "daemon": the e2e tests have a type of that name
	"github.com/crowsnest-dev/crowsnest/internal/migrate"
)

// aiuFlags are argocd-image-updater's `run` flags (its 0.x and 1.x
// releases), accepted by `crowsnest run` so that a Deployment's arguments
// keep working when the image is switched. Each one either sets what
// crowsnest's own flag or config field of the same meaning sets (an
// alias), or has no counterpart and is reported at start with the reason
// (ignored, never silently). They are hidden from --help; docs list them.
type aiuFlags struct {
	registriesConf  string
	logLevel        string
	logFormat       string
	interval        time.Duration
	workers         map[string]*int // max-concurrent-apps, -reconciles, max-concurrency
	watchNamespaces string
	leaderElection  bool
	ports           map[string]*int // health-port, metrics-port, webhook-port
	gitUser         string
	gitEmail        string
	matchLabel      string
}

// aiuAliasOf names crowsnest's flag or field for each alias, for messages
// and the docs.
var aiuAliasOf = map[string]string{
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

// aiuBoolIgnored are the ignored flags that take no value.
var aiuBoolIgnored = []string{"metrics-secure", "enable-http2", "warmup-cache", "disable-kube-events",
	"git-commit-sign-off", "enable-webhook", "webhook-require-secret", "disable-tls", "argocd-grpc-web",
	"argocd-insecure", "argocd-plaintext", "disable-kubernetes"}

// add registers the flags on f, hidden.
func (a *aiuFlags) add(f *pflag.FlagSet) {
	a.workers = map[string]*int{}
	a.ports = map[string]*int{}
	f.StringVar(&a.registriesConf, "registries-conf-path", "", "")
	f.StringVar(&a.logLevel, "loglevel", "", "")
	f.StringVar(&a.logFormat, "logformat", "", "")
	f.DurationVar(&a.interval, "interval", 0, "")
	for _, name := range []string{"max-concurrent-apps", "max-concurrent-reconciles", "max-concurrency"} {
		a.workers[name] = f.Int(name, 0, "")
	}
	f.StringVar(&a.watchNamespaces, "watch-namespaces", "", "")
	f.BoolVar(&a.leaderElection, "leader-election", false, "")
	for _, name := range []string{"health-port", "metrics-port", "webhook-port"} {
		a.ports[name] = f.Int(name, 0, "")
	}
	f.StringVar(&a.gitUser, "git-commit-user", "", "")
	f.StringVar(&a.gitEmail, "git-commit-email", "", "")
	f.StringVar(&a.matchLabel, "match-application-label", "", "")
	for name := range migrate.IgnoredAIUFlags {
		if slices.Contains(aiuBoolIgnored, name) {
			f.Bool(name, false, "")
		} else {
			f.String(name, "", "")
		}
	}
	for name := range aiuAliasOf {
		_ = f.MarkHidden(name)
	}
	for name := range migrate.IgnoredAIUFlags {
		_ = f.MarkHidden(name)
	}
}

// apply sets what the aliases given on cmd's command line say, over o's
// config overrides and addresses, and returns a note for each flag given
// that has no effect (the daemon logs them at start). An alias given with
// the crowsnest flag it stands for is an error: which one wins would be a
// guess.
func (a *aiuFlags) apply(cmd *cobra.Command, o *crowsnestd.Options) (notes []crowsnestd.IgnoredFlag, _ error) {
	f := cmd.Flags()
	s := &aiuSetter{flags: f}
	ov := &o.Overrides
	notes = a.applyLogAndPolling(s, ov)
	a.applyWatch(s, ov)
	a.applyPorts(s, o)
	if s.set("git-commit-user") {
		ov.GitAuthorName = &a.gitUser
	}
	if s.set("git-commit-email") {
		ov.GitAuthorEmail = &a.gitEmail
	}
	if s.set("match-application-label") {
		ov.Selector = &a.matchLabel
	}
	f.Visit(func(fl *pflag.Flag) { // in name order
		if why, ok := migrate.IgnoredAIUFlags[fl.Name]; ok {
			notes = append(notes, crowsnestd.IgnoredFlag{Flag: fl.Name, Instead: why})
		}
	})
	return notes, errors.Join(s.errs...)
}

// aiuSetter tells which aliases were given, and collects the errors of
// applying them.
type aiuSetter struct {
	flags *pflag.FlagSet
	errs  []error
}

// set reports whether alias was given, alone: given with the crowsnest
// flag it stands for, it is an error.
func (s *aiuSetter) set(alias string) bool {
	if !s.flags.Changed(alias) {
		return false
	}
	if own := aiuAliasOf[alias]; strings.HasPrefix(own, "--") && s.flags.Changed(strings.TrimPrefix(own, "--")) {
		s.errs = append(s.errs, fmt.Errorf("--%s is argocd-image-updater's name for %s: give one of them", alias, own))
		return false
	}
	return true
}

// applyLogAndPolling applies registries.conf, the log level and format,
// the poll interval and the worker counts.
func (a *aiuFlags) applyLogAndPolling(s *aiuSetter, ov *crowsnestd.Overrides) (notes []crowsnestd.IgnoredFlag) {
	if s.set("registries-conf-path") {
		path, err := filepath.Abs(a.registriesConf)
		if err != nil {
			s.errs = append(s.errs, fmt.Errorf("--registries-conf-path: %w", err))
		}
		ov.RegistriesConfFile = &path
	}
	if s.set("loglevel") {
		level := strings.ToLower(a.logLevel)
		if level == "trace" { // argocd-image-updater's most verbose level
			level = "debug"
		}
		ov.LogLevel = &level
	}
	if s.set("logformat") {
		format := strings.ToLower(a.logFormat)
		ov.LogFormat = &format
	}
	if s.set("interval") {
		if a.interval > 0 {
			ov.PollInterval = &a.interval
		} else {
			notes = append(notes, crowsnestd.IgnoredFlag{Flag: "interval", Instead: "--interval=0 (run once): crowsnest runs one pass with --once"})
		}
	}
	workers := 0
	for _, name := range slices.Sorted(maps.Keys(a.workers)) {
		if s.set(name) {
			workers = max(workers, *a.workers[name]) // several given: the largest
		}
	}
	if workers != 0 {
		ov.Workers = &workers
	}
	return notes
}

// applyWatch applies the watched namespaces and leader election.
func (a *aiuFlags) applyWatch(s *aiuSetter, ov *crowsnestd.Overrides) {
	if s.set("watch-namespaces") {
		var namespaces []string // "*": every namespace
		switch ns := strings.TrimSpace(a.watchNamespaces); ns {
		case "*":
		case "":
			// argocd-image-updater's default: its own namespace.
			data, err := os.ReadFile(crowsnestd.InClusterNamespaceFile)
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
		ov.LeaderElect = &a.leaderElection
	}
}

// applyPorts applies the health, metrics and webhook ports to o's
// addresses.
func (a *aiuFlags) applyPorts(s *aiuSetter, o *crowsnestd.Options) {
	addrs := map[string]*string{"health-port": &o.ProbeAddr, "metrics-port": &o.MetricsAddr, "webhook-port": &o.WebhookAddr}
	for name, port := range a.ports {
		if !s.set(name) {
			continue
		}
		switch {
		case *port == 0:
			*addrs[name] = "0"
		case *port > 0 && *port < 65536:
			*addrs[name] = ":" + strconv.Itoa(*port)
		default:
			s.errs = append(s.errs, fmt.Errorf("--%s=%d: not a port", name, *port))
		}
	}
}
