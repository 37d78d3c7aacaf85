package main

import (
	"fmt"
	"log/slog"

	"github.com/crowsnest-dev/crowsnest/config"
	gitwb "github.com/crowsnest-dev/crowsnest/writeback/git"
)

// newGitWriter builds the Git writer from the config's git section: author,
// commit message template and signing key (read once, at start).
func newGitWriter(cfg *config.Config, cacheDir string, creds gitwb.CredentialsSource, metrics *gitwb.Metrics, log *slog.Logger) (*gitwb.Writer, error) {
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
	return w, nil
}
