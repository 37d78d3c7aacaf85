package imageref

import (
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/crowsnest-dev/crowsnest/internal/redact"
)

// Image is a parsed image reference with Docker Hub's defaults applied:
// "nginx" is docker.io/library/nginx:latest.
type Image struct {
	// Repository is the repository the tags belong to.
	Repository Repository
	// Tag is the tag written in the reference ("latest" when none and no
	// digest was given).
	Tag string
	// Digest is the digest written in the reference, if any.
	Digest string
}

// Repository names a repository on a registry. Its zero value names
// none; Parse and ParseRepository make the others.
type Repository struct {
	host string // as users write it: Docker Hub is docker.io
	path string // with Docker Hub's library/ for official images
}

// Host is the registry's host (and port) the way users write it, with
// Docker Hub as docker.io ("index.docker.io" and no host at all are
// Docker Hub too).
func (r Repository) Host() string { return r.host }

// Path is the repository's path on its registry ("library/nginx").
func (r Repository) Path() string { return r.path }

// String is the repository key ("docker.io/library/nginx"): the key of
// caches, metrics and poller state.
func (r Repository) String() string { return r.host + "/" + r.path }

// Repo returns the repository key ("docker.io/library/nginx").
func (i Image) Repo() string { return i.Repository.String() }

// String writes the reference back in canonical form.
func (i Image) String() string {
	s := i.Repo()
	if i.Tag != "" {
		s += ":" + i.Tag
	}
	if i.Digest != "" {
		s += "@" + i.Digest
	}
	return s
}

// DockerHub is how users and Argo CD write Docker Hub's host.
const DockerHub = "docker.io"

// dockerHubIndex is Docker Hub's other spelling, which references may
// use and which go-containerregistry uses itself.
const dockerHubIndex = "index.docker.io"

// maxRepositoryLen is the longest repository path (after the registry)
// the distribution spec accepts.
const maxRepositoryLen = 255

// Parse parses an image reference: registries with ports, nested paths,
// tags and digests ("host:5000/a/b/c:1.2@sha256:...").
func Parse(s string) (Image, error) {
	if strings.TrimSpace(s) != s || s == "" {
		return Image{}, fmt.Errorf("invalid image reference %q: empty or surrounded by spaces", shownRef(s))
	}
	repoPart, digest, hasDigest := strings.Cut(s, "@")
	tag := ""
	// A colon after the last slash separates the tag; one before it is
	// a registry port.
	if i := strings.LastIndex(repoPart, ":"); i > strings.LastIndex(repoPart, "/") {
		repoPart, tag = repoPart[:i], repoPart[i+1:]
		if tag == "" {
			// "nginx:" is not "nginx:latest": the grammar has no empty
			// tag, and Docker and argocd-image-updater refuse it.
			return Image{}, refError(s, errors.New("':' must be followed by a tag"))
		}
	}
	repo, err := parseRepository(repoPart)
	if err != nil {
		return Image{}, refError(s, err)
	}
	// The length limit is checked on what was written; Docker Hub's
	// "library/" can take a name past it, and the canonical form would not
	// parse again.
	if n := len(repo.path); n > maxRepositoryLen {
		return Image{}, refError(s, fmt.Errorf("repository must be at most %d characters, %d with Docker Hub's library/ prefix", maxRepositoryLen, n))
	}
	if err := checkGrammar(repo, tag); err != nil {
		return Image{}, refError(s, err)
	}
	img := Image{Repository: repo, Tag: tag}
	if hasDigest {
		if err := checkDigest(repoPart, digest); err != nil {
			return Image{}, refError(s, err)
		}
		img.Digest = digest
	}
	if img.Tag == "" && img.Digest == "" {
		img.Tag = "latest"
	}
	return img, nil
}

// ParseRepository parses a repository key or any reference naming one.
func ParseRepository(s string) (Repository, error) {
	img, err := Parse(s)
	if err != nil {
		return Repository{}, err
	}
	return img.Repository, nil
}

// repositoryChars are the characters a repository path may hold at all;
// checkGrammar then holds each path component to the grammar.
const repositoryChars = "abcdefghijklmnopqrstuvwxyz0123456789_-./"

// parseRepository splits "[host/]path": the first component is a host
// when it is localhost or holds a '.' or ':', as Docker has always read
// it; otherwise the repository is on Docker Hub.
func parseRepository(s string) (Repository, error) {
	if s == "" {
		return Repository{}, errors.New("a repository name must be specified")
	}
	host, path := "", s
	if first, rest, ok := strings.Cut(s, "/"); ok && (first == "localhost" || strings.ContainsAny(first, ".:")) {
		host, path = first, rest
	}
	if n := utf8.RuneCountInString(path); n < 1 || n > maxRepositoryLen {
		return Repository{}, fmt.Errorf("repository must be between 1 and %d characters in length: %s", maxRepositoryLen, path)
	}
	if strings.ContainsFunc(path, notRepositoryChar) {
		return Repository{}, fmt.Errorf("repository can only contain the characters `%s`: %s", repositoryChars, path)
	}
	// A host is a URI authority (RFC 3986), which url.Parse reads back
	// unchanged; "host:port/x" where the port is not a number is not.
	if u, err := url.Parse("//" + host); err != nil || u.Host != host {
		return Repository{}, fmt.Errorf("registries must be valid RFC 3986 URI authorities: %s", host)
	}
	if host == "" || host == dockerHubIndex {
		host = DockerHub
	}
	if host == DockerHub && !strings.Contains(path, "/") {
		path = "library/" + path // Docker Hub's official images
	}
	return Repository{host: host, path: path}, nil
}

func notRepositoryChar(r rune) bool { return !strings.ContainsRune(repositoryChars, r) }

// The distribution spec's reference grammar, which Docker's own reading
// checks only loosely: it lets "..", "." and empty path components, a host
// like ".." and tags starting with '.' through. A reference that slipped
// by would reach registry URLs, files and patches.
var (
	hostRE      = regexp.MustCompile(`^(?:(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])(?:\.(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9]))*|\[[a-fA-F0-9:]+\])(?::[0-9]+)?$`)
	componentRE = regexp.MustCompile(`^[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*$`)
	tagRE       = regexp.MustCompile(`^[a-zA-Z0-9_][a-zA-Z0-9._-]{0,127}$`)
)

// checkGrammar holds a parsed repository and tag to the grammar.
func checkGrammar(repo Repository, tag string) error {
	if h := repo.host; !hostRE.MatchString(h) {
		return fmt.Errorf("registry host %q: want a host name or IP address with an optional port", h)
	}
	for _, c := range strings.Split(repo.path, "/") {
		if !componentRE.MatchString(c) {
			return fmt.Errorf("path component %q: want lower-case letters and digits separated by '.', '_', '__' or '-'", c)
		}
	}
	if tag != "" && !tagRE.MatchString(tag) {
		return fmt.Errorf("tag %q: want letters, digits, '_', '.' or '-', not starting with '.' or '-', at most 128", tag)
	}
	return nil
}

// invalidRef is an image reference that does not parse. Its message keeps
// to one line: the parser's own error repeats the input, control
// characters and all, and an error names its field on every line
// (config validation joins errors by line).
type invalidRef struct {
	ref string
	err error
}

func refError(ref string, err error) error { return &invalidRef{ref: ref, err: err} }

func (e *invalidRef) Error() string {
	if shown := shownRef(e.ref); shown != e.ref {
		// The parser's error may repeat a piece of what was masked.
		return fmt.Sprintf("invalid image reference %q: '@' must be followed by a digest (an image reference carries no credentials)", shown)
	}
	return redact.String(fmt.Sprintf("invalid image reference %q: %s", e.ref, escapeControl(e.err.Error())))
}

func (e *invalidRef) Unwrap() error { return e.err }

// digestLike is the start of a digest (algorithm and colon).
var digestLike = regexp.MustCompile(`^[A-Za-z0-9+._-]+:`)

// shownRef is ref as errors show it. In an image reference '@' comes
// before a digest; what stands in front of one that is not is taken for
// user information ("user:token@registry/app", "token@registry/app",
// "https://user:token@...") and masked, as is every other secret
// redact knows.
func shownRef(ref string) string {
	if i := strings.LastIndex(ref, "@"); i >= 0 && !digestLike.MatchString(ref[i+1:]) {
		ref = redact.Mask + ref[i:]
	}
	return redact.String(ref)
}

// escapeControl writes control characters as Go escapes (\n, \x00).
func escapeControl(s string) string {
	if !strings.ContainsFunc(s, unicode.IsControl) {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		if unicode.IsControl(r) {
			q := strconv.QuoteRune(r)
			b.WriteString(q[1 : len(q)-1])
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}
