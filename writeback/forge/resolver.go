package forge

import (
	"fmt"
	"net/url"
	"regexp"
	"strings"
)

// Kinds of forge (Host.Kind).
const (
	KindGitea   = "gitea"
	KindForgejo = "forgejo" // Gitea's API, the same client
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
// with a token: the host's entry in Hosts. A host nobody configured is
// refused with an error that says what to configure.
type Resolver struct {
	// Hosts maps a repository host, lower case and with its port when the
	// URLs carry one ("git.example.com", "git.example.com:3000"), to its
	// forge.
	Hosts   map[string]Host
	Options Options
}

// Resolve returns the forge API of repoURL, authenticated with token.
func (r *Resolver) Resolve(repoURL, token string) (Forge, Repo, error) {
	loc, err := parseRepoURL(repoURL)
	if err != nil {
		return nil, Repo{}, err
	}
	h, ok := r.Hosts[loc.host]
	if !ok {
		return nil, Repo{}, fmt.Errorf("host %s: not a configured forge (git.forges)", loc.host)
	}
	switch h.Kind {
	case KindGitea, KindForgejo:
		return NewGitea(token, r.Options), giteaRepo(loc, h.API), nil
	}
	return nil, Repo{}, fmt.Errorf("host %s: forge kind %q is not supported", loc.host, h.Kind)
}

// repoLocation is a repository URL read into its parts.
type repoLocation struct {
	// scheme is http or https ("https" for SSH URLs: the API's).
	scheme, host string
	// segments is the path without a .git suffix, split at "/".
	segments []string
}

// scpLike matches Git's scp-like addresses: git@host:owner/repo.git.
var scpLike = regexp.MustCompile(`^(?:[\w.-]+@)?([\w.-]+):([^/][^:]*)$`)

// parseRepoURL reads http(s)://, ssh:// and scp-like repository URLs.
// Errors never repeat the URL: it may carry a credential.
func parseRepoURL(raw string) (repoLocation, error) {
	raw = strings.TrimSpace(raw)
	var loc repoLocation
	var path string
	if m := scpLike.FindStringSubmatch(raw); m != nil && !strings.Contains(raw, "://") {
		loc.scheme, loc.host, path = "https", strings.ToLower(m[1]), m[2]
	} else {
		u, err := url.Parse(raw)
		if err != nil || u.Host == "" {
			return repoLocation{}, fmt.Errorf("repository URL %s: cannot be read", redact(raw))
		}
		switch u.Scheme {
		case "http", "https":
			loc.scheme = u.Scheme
		case "ssh", "git+ssh":
			loc.scheme = "https"
		default:
			return repoLocation{}, fmt.Errorf("repository URL %s: scheme %q has no forge API", redact(raw), u.Scheme)
		}
		loc.host, path = strings.ToLower(u.Host), u.Path
		if loc.scheme == "https" && u.Scheme != "https" && u.Port() != "" {
			loc.host = strings.ToLower(u.Hostname()) // an SSH port is not the API's
		}
	}
	path = strings.TrimSuffix(strings.Trim(path, "/"), ".git")
	for s := range strings.SplitSeq(path, "/") {
		if s == "" || s == "." || s == ".." {
			return repoLocation{}, fmt.Errorf("repository URL %s: path %q is not owner/name", redact(raw), path)
		}
		loc.segments = append(loc.segments, s)
	}
	if len(loc.segments) < 2 {
		return repoLocation{}, fmt.Errorf("repository URL %s: path %q is not owner/name", redact(raw), path)
	}
	return loc, nil
}

// giteaRepo is the Gitea repository of loc: the last two path segments;
// those before them are the sub-path Gitea is served under, which its API
// is under too (ROOT_URL).
func giteaRepo(loc repoLocation, api string) Repo {
	n := len(loc.segments)
	if api == "" {
		prefix := strings.Join(loc.segments[:n-2], "/")
		if prefix != "" {
			prefix = "/" + prefix
		}
		api = loc.scheme + "://" + loc.host + prefix + "/api/v1"
	}
	return Repo{API: strings.TrimSuffix(api, "/"), Owner: loc.segments[n-2], Name: loc.segments[n-1]}
}
