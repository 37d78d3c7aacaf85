package registry

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"

	"github.com/crowsnest-dev/crowsnest/registry/imageref"
)

// imageref reads image references without go-containerregistry, so that
// decision code need not link it. These tests hold it to the reading it
// replaced, go-containerregistry's name package plus the distribution
// grammar, on every input: same repository, tag and digest, or the same
// refusal with the same message. Here, where go-containerregistry may be
// imported, is where that reading is kept.

// ggcrReading is what the old reading made of a reference.
type ggcrReading struct {
	repo, tag, digest string
	err               string // the cause, as imageref's error unwraps to
}

var (
	oldHost      = regexp.MustCompile(`^(?:(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])(?:\.(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9]))*|\[[a-fA-F0-9:]+\])(?::[0-9]+)?$`)
	oldComponent = regexp.MustCompile(`^[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*$`)
	oldTag       = regexp.MustCompile(`^[a-zA-Z0-9_][a-zA-Z0-9._-]{0,127}$`)
)

// readWithGGCR is crowsnest's reading before imageref: split at the
// first '@' and at a colon after the last '/', go-containerregistry's
// name.NewRepository, NewTag and NewDigest, the length limit and the
// grammar, in that order; except that an empty tag ("nginx:") is refused,
// as name.ParseReference and argocd-image-updater refuse it (the old
// reading took it for "latest").
func readWithGGCR(s string) ggcrReading {
	if strings.TrimSpace(s) != s || s == "" {
		return ggcrReading{err: "empty or surrounded by spaces"}
	}
	repoPart, dgst, hasDigest := strings.Cut(s, "@")
	tag := ""
	if i := strings.LastIndex(repoPart, ":"); i > strings.LastIndex(repoPart, "/") {
		repoPart, tag = repoPart[:i], repoPart[i+1:]
		if tag == "" {
			return ggcrReading{err: "':' must be followed by a tag"}
		}
	}
	repo, err := name.NewRepository(repoPart)
	if err != nil {
		return ggcrReading{err: err.Error()}
	}
	if n := len(repo.RepositoryStr()); n > 255 {
		return ggcrReading{err: fmt.Sprintf("repository must be at most 255 characters, %d with Docker Hub's library/ prefix", n)}
	}
	if err := oldGrammar(repo, tag); err != nil {
		return ggcrReading{err: err.Error()}
	}
	out := ggcrReading{repo: Host(repo.Registry) + "/" + repo.RepositoryStr()}
	if tag != "" {
		t, err := name.NewTag(repoPart + ":" + tag)
		if err != nil {
			return ggcrReading{err: err.Error()}
		}
		out.tag = t.TagStr()
	}
	if hasDigest {
		d, err := name.NewDigest(repoPart + "@" + dgst)
		if err != nil {
			return ggcrReading{err: err.Error()}
		}
		out.digest = d.DigestStr()
	}
	if out.tag == "" && out.digest == "" {
		out.tag = "latest"
	}
	return out
}

func oldGrammar(repo name.Repository, tag string) error {
	if h := repo.RegistryStr(); !oldHost.MatchString(h) {
		return fmt.Errorf("registry host %q: want a host name or IP address with an optional port", h)
	}
	for _, c := range strings.Split(repo.RepositoryStr(), "/") {
		if !oldComponent.MatchString(c) {
			return fmt.Errorf("path component %q: want lower-case letters and digits separated by '.', '_', '__' or '-'", c)
		}
	}
	if tag != "" && !oldTag.MatchString(tag) {
		return fmt.Errorf("tag %q: want letters, digits, '_', '.' or '-', not starting with '.' or '-', at most 128", tag)
	}
	return nil
}

// readWithImageref is imageref's reading in the same terms.
func readWithImageref(s string) ggcrReading {
	img, err := imageref.Parse(s)
	switch {
	case err == nil:
		return ggcrReading{repo: img.Repo(), tag: img.Tag, digest: img.Digest}
	case errors.Unwrap(err) != nil:
		return ggcrReading{err: errors.Unwrap(err).Error()}
	case strings.HasSuffix(err.Error(), ": empty or surrounded by spaces"):
		return ggcrReading{err: "empty or surrounded by spaces"}
	}
	return ggcrReading{err: "unexpected error: " + err.Error()}
}

const testDigest = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

// ggcrCases are references at every edge of the two readings: Docker
// Hub's spellings, hosts with ports and IPv6, paths near the length
// limit, tags and digests good and bad, credentials and control
// characters, and text that is no reference at all.
var ggcrCases = []string{
	"nginx", "nginx:1.25", "nginx:", "nginx:latest", ":", "@", ":1", "@" + testDigest, "a:b:c", "a/b:c",
	"bitnami/redis:7", "library/nginx", "docker.io/nginx", "docker.io/library/nginx", "index.docker.io/nginx",
	"index.docker.io/library/nginx:1", "Docker.io/nginx", "registry-1.docker.io/nginx", "docker.io", "docker.io/",
	"ghcr.io/org/team/app:v1.2.3", "localhost/app", "localhost:5000/app", "localhost", "LOCALHOST/app", "localhost/",
	"127.0.0.1:5000/a/b/c:1.0", "10.0.0.1/app", "[::1]:5000/app:1", "[::1]/app", "[fe80::1%25en0]/app", "[::1/app",
	"host:5000/", "host:x/a", "h:/a", "h:5000/a-/b", "host:99999/app", "a.b.c/d", "a_b/c", "a__b/c-d/e.f_g:1",
	"-a/b", "a./b", "../../etc/passwd", "a/../b", "host/./x", "host//x", "/a", "a/", "a//b", "Nginx", "ñ/app", "host/ñ",
	"nginx:bad tag", "nginx:.x", "nginx:-x", "nginx:_x", "a/b:" + strings.Repeat("x", 128), "a/b:" + strings.Repeat("x", 129),
	"nginx@sha256:short", "nginx@" + testDigest, "nginx:1@" + testDigest, "h:1/x@" + testDigest, "nginx@", "nginx@sha256:",
	"nginx@SHA256:" + testDigest[7:], "nginx@md5:0123456789abcdef0123456789abcdef", "nginx@sha512:" + strings.Repeat("ab", 64),
	"nginx@sha384:" + strings.Repeat("ab", 48), "nginx@sha256:" + strings.ToUpper(testDigest[7:]), "a@b@c", "nginx@" + testDigest + "@x",
	"user:pa55@registry.example.com/app:1.0", "https://user:pa55@registry.example.com/app", "https://registry.example.com/app",
	"registry.example.com/app:1.0?access_token=x", " nginx", "nginx ", "", "0\n0", "nginx\x00", "a\tb",
	strings.Repeat("a", 246), strings.Repeat("a", 247), strings.Repeat("0", 248), strings.Repeat("a", 255),
	"ghcr.io/" + strings.Repeat("a", 255), "ghcr.io/" + strings.Repeat("a", 256), strings.Repeat("ñ", 200),
}

func TestImagerefMatchesGGCR(t *testing.T) {
	for _, s := range ggcrCases {
		t.Run(s, func(t *testing.T) {
			if got, want := readWithImageref(s), readWithGGCR(s); got != want {
				t.Errorf("Parse(%q) = %+v, go-containerregistry's reading %+v", s, got, want)
			}
			checkParseReference(t, s)
		})
	}
}

func FuzzImagerefMatchesGGCR(f *testing.F) {
	for _, s := range ggcrCases {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := readWithImageref(s), readWithGGCR(s); got != want {
			t.Fatalf("Parse(%q) = %+v, go-containerregistry's reading %+v", s, got, want)
		}
		checkParseReference(t, s)
	})
}

// checkParseReference holds what imageref accepts to
// name.ParseReference, the reading of the client that will fetch it:
// the same repository, and its tag or digest. ParseReference keeps the
// digest of "repo:tag@digest".
func checkParseReference(t *testing.T, s string) {
	t.Helper()
	img, err := imageref.Parse(s)
	if err != nil {
		return
	}
	ref, err := name.ParseReference(s)
	if err != nil {
		t.Fatalf("imageref accepts %q, name.ParseReference refuses it: %v", s, err)
	}
	if got := Host(ref.Context().Registry) + "/" + ref.Context().RepositoryStr(); got != img.Repo() {
		t.Fatalf("%q: name.ParseReference reads repository %q, imageref %q", s, got, img.Repo())
	}
	want := img.Tag
	if _, isDigest := ref.(name.Digest); isDigest {
		want = img.Digest
	}
	if ref.Identifier() != want {
		t.Fatalf("%q: name.ParseReference reads %q, imageref %q", s, ref.Identifier(), want)
	}
}
