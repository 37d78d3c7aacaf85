package registry

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"unicode"

	"github.com/google/go-containerregistry/pkg/name"

	"github.com/crowsnest-dev/crowsnest/internal/redact"
)

// Image is a parsed image reference with Docker Hub's defaults applied:
// "nginx" is docker.io/library/nginx:latest.
type Image struct {
	// Repository is the repository the tags belong to.
	Repository name.Repository
	// Tag is the tag written in the reference ("latest" when none and no
	// digest was given).
	Tag string
	// Digest is the digest written in the reference, if any.
	Digest string
}

// dockerHub is how users and Argo CD write Docker Hub's host;
// go-containerregistry says index.docker.io. Keys and messages use the
// users' spelling.
const (
	dockerHub     = "docker.io"
	ggcrDockerHub = name.DefaultRegistry
)

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

func (e *invalidRef) Unwrap() error { return e.err }

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

// maxRepositoryLen is the longest repository path (after the registry)
// go-containerregistry and the distribution spec accept.
const maxRepositoryLen = 255

// ParseImage parses an image reference: registries with ports, nested
// paths, tags and digests ("host:5000/a/b/c:1.2@sha256:...").
func ParseImage(s string) (Image, error) {
	if strings.TrimSpace(s) != s || s == "" {
		return Image{}, fmt.Errorf("invalid image reference %q: empty or surrounded by spaces", shownRef(s))
	}
	repoPart, digest, hasDigest := strings.Cut(s, "@")
	tag := ""
	// A colon after the last slash separates the tag; one before it is
	// a registry port.
	if i := strings.LastIndex(repoPart, ":"); i > strings.LastIndex(repoPart, "/") {
		repoPart, tag = repoPart[:i], repoPart[i+1:]
	}
	repo, err := name.NewRepository(repoPart)
	if err != nil {
		return Image{}, refError(s, err)
	}
	// The length limit is checked on what was written; Docker Hub's
	// "library/" can take a name past it, and the canonical form would not
	// parse again.
	if n := len(repo.RepositoryStr()); n > maxRepositoryLen {
		return Image{}, refError(s, fmt.Errorf("repository must be at most %d characters, %d with Docker Hub's library/ prefix", maxRepositoryLen, n))
	}
	if err := checkGrammar(repo, tag); err != nil {
		return Image{}, refError(s, err)
	}
	img := Image{Repository: repo}
	if tag != "" {
		t, err := name.NewTag(repoPart + ":" + tag)
		if err != nil {
			return Image{}, refError(s, err)
		}
		img.Tag = t.TagStr()
	}
	if hasDigest {
		d, err := name.NewDigest(repoPart + "@" + digest)
		if err != nil {
			return Image{}, refError(s, err)
		}
		img.Digest = d.DigestStr()
	}
	if img.Tag == "" && img.Digest == "" {
		img.Tag = "latest"
	}
	return img, nil
}

// RepoKey names a repository the way users write it, with Docker Hub as
// docker.io: the key of caches, metrics and poller state.
func RepoKey(r name.Repository) string {
	return Host(r.Registry) + "/" + r.RepositoryStr()
}

// Host names a registry the way users write it.
func Host(r name.Registry) string {
	if h := r.RegistryStr(); h != ggcrDockerHub {
		return h
	}
	return dockerHub
}

// Repo returns the repository key ("docker.io/library/nginx").
func (i Image) Repo() string { return RepoKey(i.Repository) }

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

// ParseRepo parses a repository key or any reference naming one.
func ParseRepo(s string) (name.Repository, error) {
	img, err := ParseImage(s)
	if err != nil {
		return name.Repository{}, err
	}
	return img.Repository, nil
}

// The distribution spec's reference grammar, which go-containerregistry
// checks only loosely: it lets "..", "." and empty path components, a host
// like ".." and tags starting with '.' through. A reference that slipped
// by would reach registry URLs, files and patches.
var (
	hostRE      = regexp.MustCompile(`^(?:(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])(?:\.(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9]))*|\[[a-fA-F0-9:]+\])(?::[0-9]+)?$`)
	componentRE = regexp.MustCompile(`^[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*$`)
	tagRE       = regexp.MustCompile(`^[a-zA-Z0-9_][a-zA-Z0-9._-]{0,127}$`)
)

// checkGrammar holds a parsed repository and tag to the grammar.
func checkGrammar(repo name.Repository, tag string) error {
	if h := repo.RegistryStr(); !hostRE.MatchString(h) {
		return fmt.Errorf("registry host %q: want a host name or IP address with an optional port", h)
	}
	for _, c := range strings.Split(repo.RepositoryStr(), "/") {
		if !componentRE.MatchString(c) {
			return fmt.Errorf("path component %q: want lower-case letters and digits separated by '.', '_', '__' or '-'", c)
		}
	}
	if tag != "" && !tagRE.MatchString(tag) {
		return fmt.Errorf("tag %q: want letters, digits, '_', '.' or '-', not starting with '.' or '-', at most 128", tag)
	}
	return nil
}
