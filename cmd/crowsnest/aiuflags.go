package main

import (
	"slices"

	"github.com/spf13/pflag"

	"github.com/crowsnest-dev/crowsnest/config/imageupdater"
	crowsnestd "github.com/crowsnest-dev/crowsnest/internal/daemon" // not "daemon": the e2e tests have a type of that name
)

// aiuBoolIgnored are argocd-image-updater's flags with no counterpart
// (imageupdater.IgnoredFlags) that take no value.
var aiuBoolIgnored = []string{"metrics-secure", "enable-http2", "warmup-cache", "disable-kube-events",
	"git-commit-sign-off", "enable-webhook", "webhook-require-secret", "disable-tls", "argocd-grpc-web",
	"argocd-insecure", "argocd-plaintext", "disable-kubernetes"}

// addAIUFlags registers argocd-image-updater's `run` flags on f, hidden
// (docs list them), into a: its aliases (crowsnestd.ImageUpdaterAliases)
// and the flags with no counterpart, which only need to parse.
func addAIUFlags(f *pflag.FlagSet, a *crowsnestd.ImageUpdaterFlags) {
	f.StringVar(&a.RegistriesConf, "registries-conf-path", "", "")
	f.StringVar(&a.LogLevel, "loglevel", "", "")
	f.StringVar(&a.LogFormat, "logformat", "", "")
	f.DurationVar(&a.Interval, "interval", 0, "")
	f.IntVar(&a.MaxConcurrentApps, "max-concurrent-apps", 0, "")
	f.IntVar(&a.MaxConcurrentReconciles, "max-concurrent-reconciles", 0, "")
	f.IntVar(&a.MaxConcurrency, "max-concurrency", 0, "")
	f.StringVar(&a.WatchNamespaces, "watch-namespaces", "", "")
	f.BoolVar(&a.LeaderElection, "leader-election", false, "")
	f.IntVar(&a.HealthPort, "health-port", 0, "")
	f.IntVar(&a.MetricsPort, "metrics-port", 0, "")
	f.IntVar(&a.WebhookPort, "webhook-port", 0, "")
	f.StringVar(&a.GitUser, "git-commit-user", "", "")
	f.StringVar(&a.GitEmail, "git-commit-email", "", "")
	f.StringVar(&a.MatchLabel, "match-application-label", "", "")
	for name := range imageupdater.IgnoredFlags {
		if slices.Contains(aiuBoolIgnored, name) {
			f.Bool(name, false, "")
		} else {
			f.String(name, "", "")
		}
	}
	for name := range crowsnestd.ImageUpdaterAliases {
		_ = f.MarkHidden(name)
	}
	for name := range imageupdater.IgnoredFlags {
		_ = f.MarkHidden(name)
	}
}

// givenFlags names the flags given on f's command line, in name order.
func givenFlags(f *pflag.FlagSet) []string {
	var given []string
	f.Visit(func(fl *pflag.Flag) { given = append(given, fl.Name) })
	return given
}
