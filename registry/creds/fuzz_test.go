package creds_test

import (
	"strconv"
	"strings"
	"testing"

	"github.com/crowsnest-dev/crowsnest/registry/creds"
)

func FuzzParse(f *testing.F) {
	for _, seed := range []string{
		"", "pullsecret:argocd/dockerhub", "secret:argocd/creds#token", "env:REGISTRY_SECRET", "ext:/app/auth.sh",
		"dockerconfig:/root/.docker/config.json", "foo:bar", "user:password", "secret:a/b#", "pullsecret:/", "ext:",
		"env:A B", "secret:a/b/c#d#e", ":", "pullsecret:" + strings.Repeat("a", 300) + "/b",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, s string) {
		ref, err := creds.Parse(s)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "credentials: ") {
				t.Fatalf("error %q does not start with \"credentials: \"", err)
			}
			// Of an unknown source the error names at most the source, and
			// only when it is a short lowercase word: nothing after the
			// colon, so a pasted "user:password" cannot leak its password.
			// The "; want ..." that lists the sources is fixed text.
			if src, _, ok := strings.Cut(s, ":"); ok && !knownSource(s) {
				msg, _, _ := strings.Cut(err.Error(), "; want ")
				named := strings.TrimPrefix(msg, "credentials: unknown source")
				if named != "" && (named != " "+strconv.Quote(src) || !shortWord(src)) {
					t.Fatalf("error %q for input %q says more than the source's name", err, s)
				}
			}
			return
		}
		if s == "" {
			if !ref.IsZero() {
				t.Fatalf("Parse(\"\") = %+v, want the zero Ref", ref)
			}
			return
		}
		// What parses prints back to itself.
		if ref.String() != s {
			t.Fatalf("Parse(%q).String() = %q", s, ref.String())
		}
		again, err := creds.Parse(ref.String())
		if err != nil || again != ref {
			t.Fatalf("round trip of %q: %+v, %v; want %+v", s, again, err, ref)
		}
	})
}

func knownSource(s string) bool {
	for _, p := range []string{"pullsecret:", "secret:", "env:", "ext:", "dockerconfig:"} {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}

// shortWord is what an unknown source may be to be named in an error.
func shortWord(s string) bool {
	if s == "" || len(s) > 20 {
		return false
	}
	for _, r := range s {
		if r < 'a' || r > 'z' {
			return false
		}
	}
	return true
}
