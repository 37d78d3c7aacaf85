package forge

import (
	"fmt"
	"net/url"
	"regexp"
	"strings"

	masks "github.com/crowsnest-dev/crowsnest/internal/redact"
	"github.com/crowsnest-dev/crowsnest/internal/repourl"
)

// GitHubAPI is github.com's REST API root.
const GitHubAPI = "https://api.github.com"

// forgeName is what GitHub allows in an owner or repository name, and
// GitLab in a group or project path segment; it also keeps a repository
// URL from steering requests elsewhere in the API.
var forgeName = regexp.MustCompile(`^[A-Za-z0-9_.-]+$`)

func checkSegment(repoURL, seg string) error {
	if !forgeName.MatchString(seg) || seg == "." || seg == ".." || strings.HasPrefix(seg, "-") {
		return fmt.Errorf("repository URL %s: %q is not an owner, group or repository name", masks.URL(repoURL), seg)
	}
	return nil
}

// splitRepo reads repoURL (https, ssh:// or scp-like git@host:path, with
// or without .git) into its host and path segments.
func splitRepo(repoURL string) (host string, segs []string, err error) {
	host, path, ok := repourl.Split(repoURL)
	if !ok {
		return "", nil, fmt.Errorf("repository URL %s: not a Git repository URL", masks.URL(repoURL))
	}
	segs = strings.Split(path, "/")
	for _, s := range segs {
		if err := checkSegment(repoURL, s); err != nil {
			return "", nil, err
		}
	}
	return host, segs, nil
}

// apiRoot checks an API URL given by the operator: http or https, a
// host, no credentials, no query; returned without a trailing slash.
func apiRoot(api string) (string, error) {
	u, err := url.Parse(api)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return "", fmt.Errorf("API URL %s: want http(s)://HOST[/PATH] without credentials or query", masks.URL(api))
	}
	return strings.TrimSuffix(u.String(), "/"), nil
}

// webScheme is the scheme a forge's API is reached with for a
// repository URL: http for an http:// clone URL, else https (ssh clone
// URLs are served beside an https API).
func webScheme(repoURL string) string {
	if strings.HasPrefix(strings.ToLower(strings.TrimSpace(repoURL)), "http://") {
		return "http"
	}
	return "https"
}

// GitHubRepo returns the repository of a GitHub clone URL
// (https://github.com/OWNER/REPO[.git], git@github.com:OWNER/REPO.git,
// ssh://git@HOST/OWNER/REPO.git). api is the REST API root; when empty,
// GitHubAPI for github.com and https://HOST/api/v3 (GitHub Enterprise
// Server) for any other host.
func GitHubRepo(repoURL, api string) (Repo, error) {
	host, segs, err := splitRepo(repoURL)
	if err != nil {
		return Repo{}, err
	}
	if len(segs) != 2 {
		return Repo{}, fmt.Errorf("repository URL %s: want OWNER/REPOSITORY on GitHub", masks.URL(repoURL))
	}
	switch {
	case api != "":
		if api, err = apiRoot(api); err != nil {
			return Repo{}, err
		}
	case strings.EqualFold(host, "github.com") || strings.EqualFold(host, "www.github.com"):
		api = GitHubAPI
	default:
		api = webScheme(repoURL) + "://" + host + "/api/v3"
	}
	return Repo{API: api, Owner: segs[0], Name: segs[1]}, nil
}

// GitLabRepo returns the project of a GitLab clone URL
// (https://gitlab.com/GROUP[/SUBGROUP...]/PROJECT[.git],
// git@HOST:GROUP/PROJECT.git, ssh://git@HOST/GROUP/PROJECT.git): Owner is
// the project's namespace (nested groups joined with "/"), Name its
// path. api is the REST API root; https://HOST/api/v4 when empty. A
// GitLab served under a path (api https://HOST/gitlab/api/v4) has that
// path taken off the repository's.
func GitLabRepo(repoURL, api string) (Repo, error) {
	host, segs, err := splitRepo(repoURL)
	if err != nil {
		return Repo{}, err
	}
	if api == "" {
		api = webScheme(repoURL) + "://" + host + "/api/v4"
	}
	if api, err = apiRoot(api); err != nil {
		return Repo{}, err
	}
	u, _ := url.Parse(api) // checked by apiRoot
	if prefix := strings.Trim(strings.TrimSuffix(u.Path, "/api/v4"), "/"); prefix != "" {
		if p := strings.Split(prefix, "/"); len(segs) > len(p) && strings.Join(segs[:len(p)], "/") == prefix {
			segs = segs[len(p):]
		}
	}
	if len(segs) < 2 {
		return Repo{}, fmt.Errorf("repository URL %s: want GROUP/PROJECT on GitLab", masks.URL(repoURL))
	}
	last := len(segs) - 1
	return Repo{API: api, Owner: strings.Join(segs[:last], "/"), Name: segs[last]}, nil
}
