package forge

import (
	"fmt"
	"strings"

	textredact "github.com/crowsnest-dev/crowsnest/internal/redact"

	"github.com/crowsnest-dev/crowsnest/internal/repourl"
)

// Kinds of forge (Host.Kind).
const (
	KindGitea           = "gitea"
	KindForgejo         = "forgejo" // Gitea's API, the same client
	KindBitbucketCloud  = "bitbucket"
	KindBitbucketServer = "bitbucket-server"
	KindAzureDevOps     = "azure-devops"
)

// Host is what an operator says of a forge's host: its kind and, for
// Gitea and Forgejo when the API is not where the repository URL says,
// its base URL.
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

// Resolve returns the forge API of repoURL, authenticated with username
// and token (a password, an app password or an access token, as the
// forge takes it).
func (r *Resolver) Resolve(repoURL, username, token string) (Forge, Repo, error) {
	u, ok := repourl.Parse(repoURL)
	if !ok {
		return nil, Repo{}, fmt.Errorf("repository URL %s: cannot be read", textredact.URL(repoURL))
	}
	host := strings.ToLower(u.Host)
	h, ok := r.Hosts[host]
	if !ok {
		return nil, Repo{}, fmt.Errorf("host %s: not a configured forge (git.forges)", host)
	}
	switch h.Kind {
	case KindGitea, KindForgejo:
		repo, err := giteaRepo(u, h.API)
		if err != nil {
			return nil, Repo{}, fmt.Errorf("repository URL %s: %w", textredact.URL(repoURL), err)
		}
		return NewGitea(token, r.Options), repo, nil
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

// giteaRepo is the Gitea repository of u: the last two path segments;
// those before them are the sub-path Gitea is served under, which its API
// is under too (ROOT_URL). An SSH URL's API is https on the same host.
func giteaRepo(u repourl.URL, api string) (Repo, error) {
	segs, ok := u.Segments()
	if !ok || len(segs) < 2 {
		return Repo{}, fmt.Errorf("path %q is not owner/name", u.Path)
	}
	n := len(segs)
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
