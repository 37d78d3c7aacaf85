package main

import (
	"errors"
	"fmt"

	"github.com/crowsnest-dev/crowsnest/config"
	"github.com/crowsnest-dev/crowsnest/controller/imageupdate"
	"github.com/crowsnest-dev/crowsnest/triggers"
	gitwb "github.com/crowsnest-dev/crowsnest/writeback/git"
)

// checkConfig is what a parsed config must also pass before `run` starts
// with it or accepts it on reload, and what `config validate` checks: one
// function, so the two never disagree. It compiles what packages above
// config compile (notification conditions, image policies, the Git commit
// message) and reads what the registries section names (registries.conf,
// CA files, webhook secrets). baseDir is the config file's folder.
func checkConfig(c *config.Config, baseDir string) error {
	if _, err := triggers.Compile(&c.Notifications); err != nil {
		return err
	}
	if _, err := imageupdate.CompilePolicies(c.ImagePolicies); err != nil {
		return err
	}
	var errs []error
	if c.Git.CommitMessage != "" {
		if _, err := gitwb.ParseMessage(c.Git.CommitMessage); err != nil {
			errs = append(errs, fmt.Errorf("git.commitMessage: %w", err))
		}
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
