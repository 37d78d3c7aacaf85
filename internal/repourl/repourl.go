// Package repourl reads Git repository URLs the way Argo CD's repo helpers
// do, for notification conditions (triggers) and templates (notify), and
// into their parts for the forges' APIs (writeback/forge).
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
	u, ok := split(repoURL)
	if !ok {
		return redact.URL(repoURL)
	}
	return "https://" + u.Host + "/" + u.Path
}

// FullName returns a repository's path on its host ("org/repo"), as
// Argo CD's repo.FullNameByRepoURL does.
func FullName(repoURL string) string {
	u, ok := split(repoURL)
	if !ok {
		return ""
	}
	return u.Path
}

// URL is a Git repository URL in parts, without user information.
type URL struct {
	// Scheme is "https", "http", "git" or "ssh" (scp-like addresses
	// too).
	Scheme string
	// Host is the host name; a web URL's explicit port is kept
	// ("git.example.com:8443"), an SSH port is not: it says nothing of
	// where the web server listens.
	Host string
	// Path is the repository's path on the host, percent-decoded, without
	// slashes around it or a .git suffix ("org/repo").
	Path string
}

// Parse reads repoURL (ssh://, scp-like, git://, http:// or https://)
// into its parts; false when it is not a repository URL.
func Parse(repoURL string) (URL, bool) {
	u, ok := split(repoURL)
	if !ok {
		return URL{}, false
	}
	if !strings.Contains(repoURL, "://") {
		// An scp-like address is not a URL: net/url did not decode it.
		if p, err := url.PathUnescape(u.Path); err == nil {
			u.Path = p
		}
	}
	return u, true
}

// Segments splits the path at "/"; false when a segment is empty, "." or
// "..", which no repository's path has and which would walk out of the
// path an API URL is built from.
func (u URL) Segments() ([]string, bool) {
	seg := strings.Split(u.Path, "/")
	for _, s := range seg {
		if s == "" || s == "." || s == ".." {
			return nil, false
		}
	}
	return seg, true
}

func split(s string) (URL, bool) {
	s = strings.TrimSpace(s)
	var out URL
	if !strings.Contains(s, "://") {
		// User information before the host, a password included
		// ("user:token@host:org/repo"), is not the host.
		if at := strings.LastIndex(s, "@"); at >= 0 && !strings.ContainsAny(s[:at], "/") {
			s = s[at+1:]
		}
		m := scpLike.FindStringSubmatch(s)
		if m == nil {
			return URL{}, false
		}
		out = URL{Scheme: "ssh", Host: m[1], Path: m[2]}
	} else {
		u, err := url.Parse(s)
		if err != nil || u.Host == "" {
			return URL{}, false
		}
		out = URL{Scheme: strings.ToLower(u.Scheme), Host: u.Hostname(), Path: u.Path}
		if out.Scheme == "https" || out.Scheme == "http" {
			out.Host = u.Host // keep an explicit web port
		}
	}
	out.Path = strings.TrimSuffix(strings.Trim(out.Path, "/"), ".git")
	return out, out.Path != ""
}

// Split returns a repository URL's host (with the port of an http(s)
// URL) and its path on the host without slashes around it or a .git
// suffix; false when it is not a repository URL.
func Split(repoURL string) (host, path string, ok bool) {
	u, ok := split(repoURL)
	return u.Host, u.Path, ok
}
