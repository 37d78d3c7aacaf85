package setup

import (
	"fmt"
	"log/slog"
	"strings"

	"github.com/crowsnest-dev/crowsnest/config"
	"github.com/crowsnest-dev/crowsnest/writeback/forge"
	gitwb "github.com/crowsnest-dev/crowsnest/writeback/git"
)

// NewGitWriter builds the Git writer from the config's git section: author,
// commit message template, signing key, the Git servers' CAs and the
// forges (read once, at start). apps are the notification services in
// force, whose GitHub App the forges that opt in lend to pull requests
// (nil: none is lent).
func NewGitWriter(cfg *config.Config, cacheDir string, creds gitwb.CredentialsSource, metrics *gitwb.Metrics, log *slog.Logger,
	apps *NotificationApps) (*gitwb.Writer, error) {
	w := &gitwb.Writer{
		CacheDir:    cacheDir,
		Credentials: creds,
		AuthorName:  cfg.Git.Author.Name,
		AuthorEmail: cfg.Git.Author.Email,
		Metrics:     metrics,
		Log:         log,
	}
	if cfg.Git.CommitMessage != "" {
		t, err := gitwb.ParseMessage(cfg.Git.CommitMessage)
		if err != nil {
			return nil, fmt.Errorf("git.commitMessage: %w", err)
		}
		w.Message = t
	}
	if !cfg.Git.SigningKey.IsZero() {
		key, err := cfg.Git.SigningKey.Value()
		if err != nil {
			return nil, fmt.Errorf("git.signingKey (%s): %w", cfg.Git.SigningKey, err)
		}
		var pass string
		if !cfg.Git.SigningKeyPassphrase.IsZero() {
			if pass, err = cfg.Git.SigningKeyPassphrase.Value(); err != nil {
				return nil, fmt.Errorf("git.signingKeyPassphrase (%s): %w", cfg.Git.SigningKeyPassphrase, err)
			}
		}
		if w.SignKey, err = gitwb.ReadSignKey([]byte(key), []byte(pass)); err != nil {
			return nil, fmt.Errorf("git.signingKey (%s): %w", cfg.Git.SigningKey, err)
		}
	}
	for host, t := range cfg.Git.TLS {
		bundle, err := t.CABundle()
		if err != nil {
			return nil, fmt.Errorf("git.tls[%s]: %w", host, err)
		}
		if w.TLS == nil {
			w.TLS = map[string]gitwb.TLS{}
		}
		w.TLS[strings.ToLower(host)] = gitwb.TLS{CABundle: bundle, InsecureSkipVerify: t.InsecureSkipVerify}
		if t.InsecureSkipVerify {
			log.Warn("TLS verification is off for a Git server (git.tls.insecureSkipVerify)", "host", host)
		}
	}
	// Pull requests are opened on the forges git.forges names and the
	// well-known ones; a repository on another host gets an error
	// naming git.forges when a pull request is asked for it.
	hosts := make(map[string]forge.Host, len(cfg.Git.Forges))
	lend := map[string]bool{}
	for host, f := range cfg.Git.Forges {
		hosts[strings.ToLower(host)] = forge.Host{Kind: f.Kind, API: f.API}
		if f.UseNotificationsGitHubApp {
			lend[strings.ToLower(host)] = true
		}
	}
	var fm *forge.Metrics
	if metrics != nil {
		fm = metrics.Forge
	}
	forges := &gitwb.TokenForges{Resolver: &forge.Resolver{Hosts: hosts, Options: forge.Options{Metrics: fm}}}
	if len(lend) > 0 {
		// The operator's app, for the pull requests of credentials
		// without a token on these hosts only.
		forges.Apps = notificationsLender{hosts: lend, apps: apps}
	}
	w.Forges = forges
	return w, nil
}
