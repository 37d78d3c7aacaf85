package forge

import (
	"fmt"
	"strings"

	textredact "github.com/crowsnest-dev/crowsnest/internal/redact"

	"github.com/crowsnest-dev/crowsnest/internal/repourl"
)

// Kinds of forge (Host.Kind).
const (
	KindGitHub          = "github"
	KindGitLab          = "gitlab"
	KindGitea           = "gitea"
	KindForgejo         = "forgejo" // Gitea's API, the same client
	KindBitbucketCloud  = "bitbucket"
	KindBitbucketServer = "bitbucket-server"
	KindAzureDevOps     = "azure-devops"
)

// Host is what an operator says of a forge's host: its kind and, when
// the API is not where the kind's default says, its base URL.
type Host struct {
	Kind string
	// API is the API base URL ("https://git.example.com/api/v1"); ""
	// derives it from the repository URL.
	API string
}

// Resolver finds the forge of a repository URL and its pull-request API
// with the credentials that push to it: the host's entry in Hosts. A host
// nobody configured is refused with an error that says what to
// configure.
type Resolver struct {
	// Hosts maps a repository host, lower case and with its port when
	// web URLs carry one ("git.example.com", "git.example.com:3000"), to
	// its forge.
	Hosts   map[string]Host
	Options Options
}

// bitbucketTokenUser is the user name Bitbucket documents for Git over
// HTTPS with an access token; its API takes such a token as a bearer.
const bitbucketTokenUser = "x-token-auth"

// Kinds are the kinds of forge Resolve knows.
var Kinds = []string{KindGitHub, KindGitLab, KindGitea, KindForgejo, KindBitbucketCloud, KindBitbucketServer, KindAzureDevOps}

// wellKnown are the hosts whose forge needs no configuration.
var wellKnown = map[string]string{
	"github.com": KindGitHub, "www.github.com": KindGitHub,
	"gitlab.com":    KindGitLab,
	"bitbucket.org": KindBitbucketCloud,
	"dev.azure.com": KindAzureDevOps, "ssh.dev.azure.com": KindAzureDevOps,
	"codeberg.org": KindForgejo,
}

// hostOf returns the configured (or well-known) forge of host; kind, when
// not "", is the forge the repository's settings name (argocd-image-
// updater's pullRequest.github): taken for a host nobody configured, with
// the API where that kind's default puts it. The operator's entry wins.
func (r *Resolver) hostOf(host, kind string) (Host, bool) {
	if h, ok := r.Hosts[host]; ok {
		return h, true
	}
	if h, port, found := strings.Cut(host, ":"); found && port == "443" {
		if e, ok := r.Hosts[h]; ok {
			return e, true
		}
		host = h
	}
	if kind != "" {
		return Host{Kind: kind}, true
	}
	if k, ok := wellKnown[host]; ok {
		return Host{Kind: k}, true
	}
	if strings.HasSuffix(host, ".visualstudio.com") {
		return Host{Kind: KindAzureDevOps}, true
	}
	return Host{}, false
}

// Resolve returns the forge API of repoURL, authenticated with username
// and token (a password, an app password or an access token, as the
// forge takes it). kind is the forge the repository's settings name, ""
// when they name none (see hostOf).
func (r *Resolver) Resolve(repoURL, kind, username, token string) (Forge, Repo, error) {
	u, host, h, err := r.find(repoURL, kind)
	if err != nil {
		return nil, Repo{}, err
	}
	r = &Resolver{Hosts: r.Hosts, Options: r.counted(h.Kind)}
	switch h.Kind {
	case KindGitHub:
		repo, err := GitHubRepo(repoURL, h.API)
		return NewGitHub(token, r.Options), repo, err
	case KindGitLab:
		repo, err := GitLabRepo(repoURL, h.API)
		return NewGitLab(token, r.Options), repo, err
	case KindGitea, KindForgejo:
		repo, err := giteaRepo(repoURL, u, h.API)
		return NewGitea(token, r.Options), repo, err
	case KindBitbucketCloud:
		repo, err := BitbucketCloudRepo(repoURL)
		if username == bitbucketTokenUser {
			username = ""
		}
		return NewBitbucketCloud(username, token, r.Options), repo, err
	case KindBitbucketServer:
		repo, err := BitbucketServerRepo(repoURL)
		return NewBitbucketServer(username, token, r.Options), repo, err
	case KindAzureDevOps:
		repo, err := AzureDevOpsRepo(repoURL)
		return NewAzureDevOps(token, r.Options), repo, err
	}
	return nil, Repo{}, fmt.Errorf("host %s: forge kind %q is not supported", host, h.Kind)
}

// find returns repoURL read, its host (lower case) and the host's forge.
func (r *Resolver) find(repoURL, kind string) (repourl.URL, string, Host, error) {
	u, ok := repourl.Parse(repoURL)
	if !ok {
		return u, "", Host{}, fmt.Errorf("repository URL %s: cannot be read", textredact.URL(repoURL))
	}
	host := strings.ToLower(u.Host)
	h, ok := r.hostOf(host, kind)
	if !ok {
		return u, host, Host{}, fmt.Errorf("host %s: forge unknown; name its kind in the config's git.forges", host)
	}
	return u, host, h, nil
}

// counted is the resolver's options with its calls counted as kind's.
func (r *Resolver) counted(kind string) Options {
	o := r.Options
	o.Transport = o.Metrics.transport(kind, o.Transport)
	return o
}

// GitHubRepo returns the repository of repoURL, whose host's forge must
// be GitHub (as Resolve finds it), for a client made apart from Resolve:
// a GitHub App installation's (NewGitHubApp), which keeps its token
// across writes.
func (r *Resolver) GitHubRepo(repoURL, kind string) (Repo, error) {
	_, host, h, err := r.find(repoURL, kind)
	if err != nil {
		return Repo{}, err
	}
	if h.Kind != KindGitHub {
		return Repo{}, fmt.Errorf("host %s: the forge is %s, not GitHub", host, h.Kind)
	}
	return GitHubRepo(repoURL, h.API)
}

// NewGitHubApp is NewGitHubApp with the resolver's options, its calls
// (the token exchange too) counted as GitHub's.
func (r *Resolver) NewGitHubApp(app GitHubApp) (*GitHub, error) {
	return NewGitHubApp(app, r.counted(KindGitHub))
}

// giteaRepo is the Gitea repository of u: the last two path segments;
// those before them are the sub-path Gitea is served under, which its API
// is under too (ROOT_URL). An SSH URL's API is https on the same host.
func giteaRepo(repoURL string, u repourl.URL, api string) (Repo, error) {
	segs, ok := u.Segments()
	if !ok || len(segs) < 2 {
		return Repo{}, fmt.Errorf("repository URL %s: path %q is not owner/name", textredact.URL(repoURL), u.Path)
	}
	n := len(segs)
	for _, seg := range segs[n-2:] {
		if err := checkSegment(repoURL, seg); err != nil {
			return Repo{}, err
		}
	}
	if api == "" {
		scheme := u.Scheme
		if scheme != "http" {
			scheme = "https"
		}
		prefix := strings.Join(segs[:n-2], "/")
		if prefix != "" {
			prefix = "/" + prefix
		}
		api = scheme + "://" + strings.ToLower(u.Host) + prefix + "/api/v1"
	}
	return Repo{API: strings.TrimSuffix(api, "/"), Owner: segs[n-2], Name: segs[n-1]}, nil
}
