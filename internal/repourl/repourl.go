// Package repourl reads Git repository URLs the way Argo CD's repo helpers
// do, for notification conditions (triggers) and templates (notify), and
// for the forge a repository's pull requests are opened on
// (writeback/forge).
package repourl

import (
	"net/url"
	"regexp"
	"strings"

	"github.com/crowsnest-dev/crowsnest/internal/redact"
)

// scpLike matches Git's scp-like addresses: git@github.com:org/repo.git.
var scpLike = regexp.MustCompile(`^(?:[\w.-]+@)?([\w.-]+):(?:/*)([^/].*)$`)

// ToHTTPS turns a Git repository URL (ssh://, scp-like, git://,
// http:// or https://) into its https:// browse URL without user info or a
// .git suffix, for links in messages. Anything it cannot read is returned
// as it is, but with credentials masked (redact.URL): it ends up in a
// message.
func ToHTTPS(repoURL string) string {
	host, path, ok := splitRepoURL(repoURL)
	if !ok {
		return redact.URL(repoURL)
	}
	return "https://" + host + "/" + path
}

// FullName returns a repository's path on its host ("org/repo"), as
// Argo CD's repo.FullNameByRepoURL does.
func FullName(repoURL string) string {
	_, path, ok := splitRepoURL(repoURL)
	if !ok {
		return ""
	}
	return path
}

// Split returns a repository URL's host (with the port of an http(s)
// URL) and its path on the host without slashes around it or a .git
// suffix; false when it is not a repository URL.
func Split(repoURL string) (host, path string, ok bool) { return splitRepoURL(repoURL) }

func splitRepoURL(s string) (host, path string, ok bool) {
	s = strings.TrimSpace(s)
	if !strings.Contains(s, "://") {
		// User information before the host, a password included
		// ("user:token@host:org/repo"), is not the host.
		if at := strings.LastIndex(s, "@"); at >= 0 && !strings.ContainsAny(s[:at], "/") {
			s = s[at+1:]
		}
		m := scpLike.FindStringSubmatch(s)
		if m == nil {
			return "", "", false
		}
		host, path = m[1], m[2]
	} else {
		u, err := url.Parse(s)
		if err != nil || u.Host == "" {
			return "", "", false
		}
		host, path = u.Hostname(), u.Path
		if u.Scheme == "https" || u.Scheme == "http" {
			host = u.Host // keep an explicit web port
		}
	}
	path = strings.TrimSuffix(strings.Trim(path, "/"), ".git")
	return host, path, path != ""
}
