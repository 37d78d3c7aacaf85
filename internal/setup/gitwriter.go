package setup

import (
	"fmt"
	"log/slog"
	"strings"
	"text/template"

	"github.com/google/go-containerregistry/pkg/name"

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
		// config validation refuses api with a signing key.
		CommitMethod: cfg.Git.CommitMethod,
		Metrics:      metrics,
		Log:          log,
	}
	if cfg.Git.CommitMessage != "" {
		t, err := gitwb.ParseMessage(cfg.Git.CommitMessage)
		if err != nil {
			return nil, fmt.Errorf("git.commitMessage: %w", err)
		}
		w.Message = t
	}
	if err := setPullRequestText(w, cfg); err != nil {
		return nil, err
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

// setPullRequestText sets w's pull request templates (git.pullRequestTitle
// and git.pullRequestBody) and image links (registries.list[].link).
func setPullRequestText(w *gitwb.Writer, cfg *config.Config) error {
	for _, p := range []struct {
		key, what, text string
		to              **template.Template
	}{
		{"git.pullRequestTitle", "pull request title", cfg.Git.PullRequestTitle, &w.PullRequestTitle},
		{"git.pullRequestBody", "pull request body", cfg.Git.PullRequestBody, &w.PullRequestBody},
	} {
		if p.text == "" {
			continue
		}
		t, err := gitwb.ParsePullRequestTemplate(p.what, p.text)
		if err != nil {
			return fmt.Errorf("%s: %w", p.key, err)
		}
		*p.to = t
	}
	links, err := newRegistryLinks(cfg.Registries.List)
	if err != nil {
		return err
	}
	w.RegistryLinks = links
	return nil
}

// registryLinks are the image pages of pull request bodies: the
// registries.list entry's link template for an image under its prefix,
// else the well-known registries' pages.
type registryLinks struct {
	list      config.RegistryList
	templates map[*config.Registry]*template.Template
}

func newRegistryLinks(list config.RegistryList) (*registryLinks, error) {
	l := &registryLinks{list: list, templates: map[*config.Registry]*template.Template{}}
	for i := range list {
		if list[i].Link == "" {
			continue
		}
		t, err := list[i].LinkTemplate()
		if err != nil {
			return nil, fmt.Errorf("registries.list[%d].link: %w", i, err)
		}
		l.templates[&list[i]] = t
	}
	return l, nil
}

// Link implements gitwb.RegistryLinks.
func (l *registryLinks) Link(image, version string) string {
	qualified := l.list.Qualify(image)
	t := l.templates[l.list.Match(image)]
	if t == nil {
		return gitwb.WellKnownRegistryLink(qualified, version)
	}
	repo, err := name.NewRepository(qualified)
	if err != nil {
		return ""
	}
	tag, _, _ := strings.Cut(version, "@")
	var b strings.Builder
	if err := t.Execute(&b, config.RegistryLinkData{Registry: repo.RegistryStr(), Repository: repo.RepositoryStr(), Tag: tag}); err != nil {
		return ""
	}
	return b.String()
}
