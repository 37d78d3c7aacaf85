package setup

import (
	"errors"
	"fmt"
	"log/slog"

	"github.com/crowsnest-dev/crowsnest/config"
	"github.com/crowsnest-dev/crowsnest/controller/imageupdate"
	"github.com/crowsnest-dev/crowsnest/notify/pipeline"
	"github.com/crowsnest-dev/crowsnest/triggers"
)

// CheckConfig is what a parsed config must also pass before `run` starts
// with it or accepts it on reload, and what `config validate` checks: one
// function, so the two never disagree. It builds what run builds from the
// config alone, through run's own constructors: notification conditions
// and templates, image policies, the Git writer (commit message, signing
// key, CAs) and the registries (registries.conf, CA files, webhook
// secrets). Left to run: what needs the cluster (argocd-notifications-cm,
// pull secrets) and notification services' secrets.
// baseDir is the config file's folder.
// Every problem is returned (joined), not only the first, so `config
// validate` shows them all in one pass.
func CheckConfig(c *config.Config, baseDir string) error {
	quiet := slog.New(slog.DiscardHandler)
	var errs []error
	// Notifications compile as run compiles them (triggers first: their
	// errors name the trigger and condition); services are built by run
	// only, as their secrets ($key, env:, file:) are the cluster's and the
	// daemon's environment's.
	if _, err := triggers.Compile(&c.Notifications); err != nil {
		errs = append(errs, err)
	} else if err := pipeline.Check(&c.Notifications); err != nil {
		errs = append(errs, err)
	}
	if _, err := imageupdate.CompilePolicies(c.ImagePolicies); err != nil {
		errs = append(errs, err)
	}
	if _, err := NewGitWriter(c, "", nil, nil, quiet, nil); err != nil {
		errs = append(errs, err)
	}
	if _, err := c.Registries.Resolved(baseDir); err != nil {
		errs = append(errs, err)
	}
	for i := range c.Registries.Webhook.Sources {
		if _, err := c.Registries.Webhook.Sources[i].LoadSecret(); err != nil {
			errs = append(errs, fmt.Errorf("registries.webhook.sources[%d]: %w", i, err))
		}
	}
	return errors.Join(errs...)
}
