package daemon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/crowsnest-dev/crowsnest/config"
	"github.com/crowsnest-dev/crowsnest/registry"
	"github.com/crowsnest-dev/crowsnest/registry/webhook"
)

// newWebhookHandler builds the registry webhook receiver for the configured
// sources, or returns nil when none are configured. Pushes refresh the
// repository at once.
func newWebhookHandler(cfg config.RegistryWebhook, poller *registry.Poller, reg prometheus.Registerer, log *slog.Logger) (http.Handler, error) {
	if len(cfg.Sources) == 0 {
		return nil, nil
	}
	sources := make([]webhook.Source, 0, len(cfg.Sources))
	var errs []error
	for i := range cfg.Sources {
		s := &cfg.Sources[i]
		secret, err := s.LoadSecret()
		if err != nil {
			errs = append(errs, fmt.Errorf("registries.webhook.sources[%d]: %w", i, err))
			continue
		}
		sources = append(sources, webhook.Source{Name: s.Name, Type: webhook.SourceType(s.Type), Secret: secret, Registry: s.Registry})
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	recv, err := webhook.NewReceiver(webhook.Config{
		Sources:              sources,
		AllowUnauthenticated: cfg.AllowUnauthenticated,
		Listener:             pushRefresher{poller: poller, log: log},
		Metrics:              webhook.NewMetrics(reg),
		Log:                  log,
	})
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.Handle("/webhooks/registry/{source}", recv)
	return mux, nil
}

// pushRefresher has the poller poll a pushed repository now.
type pushRefresher struct {
	poller *registry.Poller
	log    *slog.Logger
}

var _ webhook.Listener = pushRefresher{}

func (p pushRefresher) Pushed(_ context.Context, ev webhook.PushEvent) {
	if !p.poller.Refresh(ev.Repository) {
		p.log.Debug("registry push for a repository nobody uses", "repository", ev.Repository, "source", ev.Source)
	}
}
