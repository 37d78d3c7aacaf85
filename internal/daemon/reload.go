package daemon

import (
	"log/slog"
	"reflect"

	"github.com/crowsnest-dev/crowsnest/config"
	"github.com/crowsnest-dev/crowsnest/config/reload"
	"github.com/crowsnest-dev/crowsnest/internal/logging"
)

// buildReload makes the config watcher accept only versions that pass
// the start's checks, and apply an accepted one to the parts that take
// it while running.
func (b *Daemon) buildReload() error {
	if b.cfgWatcher == nil {
		return nil
	}
	b.cfgWatcher.Applier = reloader{b}
	return nil
}

// reloader is the config watcher's reload.Applier.
type reloader struct{ b *Daemon }

var _ reload.Applier = reloader{}

// Accept compiles triggers and policies as part of accepting a version,
// so one that does not compile is counted and logged as rejected.
func (r reloader) Accept(next *config.Config) error {
	_, err := r.b.o.effective(next)
	return err
}

func (r reloader) Apply(_, next *config.Config) { r.b.reload(next) }

// reload applies a new version of the config file.
func (b *Daemon) reload(next *config.Config) {
	o, log := &b.o, b.log
	eff, err := o.effective(next)
	if err != nil {
		log.Error("config reload rejected", "path", o.ConfigPath, "error", err)
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
	log.Info("config reloaded", "path", o.ConfigPath)
	b.engine.RequeueAll()
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
