package creds_test

import (
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
			// An unknown source is never echoed beyond a short word, so a
			// pasted "user:password" cannot leak its password.
			// The "; want ..." that lists the sources is fixed text, which
			// an input may happen to match (":ext:").
			msg, _, _ := strings.Cut(err.Error(), "; want ")
			if _, rest, ok := strings.Cut(s, ":"); ok && len(rest) > 3 && !knownSource(s) && strings.Contains(msg, rest) {
				t.Fatalf("error %q repeats input %q", err, s)
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
