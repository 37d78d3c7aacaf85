package imageref

import (
	"regexp"
	"strings"
	"testing"
)

// The distribution spec's reference grammar, written apart from the
// parser as an oracle: a host (domain components or a bracketed IPv6
// address, optional port) and path components of lower-case letters and
// digits joined by '.', '_', "__" or runs of '-'.
var (
	hostGrammar      = regexp.MustCompile(`^(?:(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])(?:\.(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9]))*|\[[a-fA-F0-9:]+\])(?::[0-9]+)?$`)
	componentGrammar = regexp.MustCompile(`^[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*$`)
	tagGrammar       = regexp.MustCompile(`^[a-zA-Z0-9_][a-zA-Z0-9._-]{0,127}$`)
)

// FuzzParseGrammar: whatever Parse accepts is a reference the
// distribution grammar allows: no "..", no empty path component, no tag
// a registry could not hold. What it refuses, it refuses with an error
// that names the input.
func FuzzParseGrammar(f *testing.F) {
	for _, s := range []string{
		"nginx", "ghcr.io/org/team/app:v1.2.3", "localhost:5000/a/b", "127.0.0.1:5000/a__b/c-d/e.f_g:1",
		"[::1]:5000/app:1", "../../etc/passwd", "a/../b", "host/./x", "host//x", "-a/b", "a./b", "h:5000/a-/b",
		"registry.example.com:443/app@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
		"a/b:" + strings.Repeat("x", 129), "a/b:.x", "nginx:", "h:5000/a:", "A/b", "h:x/a", "h:/a", "a.b.c/d", "a_b/c", "docker.io/library/nginx",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		img, err := Parse(s)
		if err != nil {
			if !strings.Contains(err.Error(), "invalid image reference") {
				t.Fatalf("error %q does not say what is wrong", err)
			}
			return
		}
		if host := img.Repository.Host(); !hostGrammar.MatchString(host) {
			t.Fatalf("accepted %q with registry host %q", s, host)
		}
		for _, c := range strings.Split(img.Repository.Path(), "/") {
			if !componentGrammar.MatchString(c) {
				t.Fatalf("accepted %q with path component %q", s, c)
			}
		}
		if img.Tag != "" && !tagGrammar.MatchString(img.Tag) {
			t.Fatalf("accepted %q with tag %q", s, img.Tag)
		}
		// A ':' after the last '/' (before any digest) writes a tag, which
		// the grammar does not allow empty.
		name, _, _ := strings.Cut(s, "@")
		if i := strings.LastIndex(name, ":"); i > strings.LastIndex(name, "/") && i == len(name)-1 {
			t.Fatalf("accepted %q, whose tag is empty, as tag %q", s, img.Tag)
		}
	})
}
