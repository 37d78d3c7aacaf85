package registry

import (
	"net/url"
	"strings"
)

// An image's source as OCI annotations (and the same-named config labels)
// state it: the commit it was built from and the repository that holds it.
const (
	keyRevision = "org.opencontainers.image.revision"
	keySource   = "org.opencontainers.image.source"
)

// Bounds of what is kept: a tenant builds the image, and pull request
// bodies show these values. 128 takes a SHA-256 commit ID (64) or a long
// tag; 512 takes any repository URL a forge gives.
const (
	maxRevisionLen = 128
	maxSourceLen   = 512
)

// provenance is an image's source revision and repository, each kept only
// when it looks like what it claims to be; anything else is dropped
// without a word (it is shown, never acted on).
type provenance struct {
	revision, source string
}

// fill sets each field still empty from kv (annotations or labels), when
// kv holds a valid value for it.
func (p *provenance) fill(kv map[string]string) {
	if rev := kv[keyRevision]; p.revision == "" && validRevision(rev) {
		p.revision = rev
	}
	if src := kv[keySource]; p.source == "" && validSource(src) {
		p.source = src
	}
}

// merge sets each field still empty from o's.
func (p *provenance) merge(o provenance) {
	if p.revision == "" {
		p.revision = o.revision
	}
	if p.source == "" {
		p.source = o.source
	}
}

// validRevision accepts a commit ID or a tag: 1-128 characters of
// [A-Za-z0-9._:/+-], so nothing in it can be markup or a line break.
func validRevision(s string) bool {
	return s != "" && len(s) <= maxRevisionLen && alnumOr(s, "._:/+-")
}

// validSource accepts an absolute http(s) URL with a host and without
// user information, of at most 512 characters, each one RFC 3986 allows
// in a URL (no spaces, quotes, angle brackets or backticks).
func validSource(s string) bool {
	if s == "" || len(s) > maxSourceLen || !alnumOr(s, "-._~:/?#[]@!$&'()*+,;=%") {
		return false
	}
	u, err := url.Parse(s)
	if err != nil {
		return false
	}
	return (u.Scheme == "https" || u.Scheme == "http") && u.Host != "" && u.User == nil && u.Opaque == ""
}

// alnumOr reports whether every byte of s is an ASCII letter or digit or
// one of extra.
func alnumOr(s, extra string) bool {
	for i := range len(s) {
		c := s[i]
		alnum := 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
		if !alnum && strings.IndexByte(extra, c) < 0 {
			return false
		}
	}
	return true
}
