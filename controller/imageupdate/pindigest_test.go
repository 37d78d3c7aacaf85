package imageupdate

import (
	"strings"
	"testing"

	"github.com/crowsnest-dev/crowsnest/config"
)

// pin-digest is read from the annotation and from an image policy; a
// value that is not true or false leaves nothing written (WriteBack.Method
// empty) and names the key; a misspelt key is reported.
func TestPinDigestSettings(t *testing.T) {
	base := map[string]string{Prefix + KeyImageList: "ghcr.io/acme/web"}
	with := func(kv ...string) map[string]string {
		ann := map[string]string{}
		for k, v := range base {
			ann[k] = v
		}
		for i := 0; i+1 < len(kv); i += 2 {
			ann[kv[i]] = kv[i+1]
		}
		return ann
	}
	spec, errs := FromAnnotations(with(OwnPrefix+KeyPinDigest, "true"))
	if len(errs) != 0 || !spec.WriteBack.PinDigest || spec.WriteBack.Method != MethodArgoCD {
		t.Errorf("pin-digest true: %+v, %v", spec.WriteBack, errs)
	}
	spec, errs = FromAnnotations(with(OwnPrefix+KeyPinDigest, "yes"))
	if spec.WriteBack.Method != "" || len(errs) != 1 || !strings.Contains(errs[0].Error(), OwnPrefix+KeyPinDigest) {
		t.Errorf("pin-digest yes: method %q, errors %v; want nothing written and the key named", spec.WriteBack.Method, errs)
	}
	_, errs = FromAnnotations(with(OwnPrefix+"pin-digests", "true"))
	if len(errs) != 1 || !strings.Contains(errs[0].Error(), "unknown key") || !strings.Contains(errs[0].Error(), KeyPinDigest) {
		t.Errorf("a misspelt key: %v, want it reported as unknown", errs)
	}

	ps, err := CompilePolicies([]config.ImagePolicy{{Name: "pinned", Match: config.PolicyMatch{Projects: []string{"*"}},
		Images:    []config.PolicyImage{{Image: "ghcr.io/acme/web"}},
		WriteBack: config.PolicyWriteBack{Method: "git", PinDigest: true}}})
	if err != nil {
		t.Fatal(err)
	}
	if !ps.list[0].spec.WriteBack.PinDigest {
		t.Errorf("the image policy's pinDigest did not reach its spec: %+v", ps.list[0].spec.WriteBack)
	}
}

func TestTagMoved(t *testing.T) {
	for _, tc := range []struct {
		from, to string
		moved    bool
	}{
		{"1.1.0@sha256:aa", "1.1.0@sha256:bb", true},
		{"1.1.0@sha256:aa", "1.2.0@sha256:bb", false},
		{"1.1.0", "1.1.0@sha256:bb", false}, // pinned for the first time
		{"@sha256:aa", "@sha256:bb", false},
		{"1.1.0@sha256:aa", "1.1.0@sha256:aa", false},
	} {
		if _, moved := TagMoved(tc.from, tc.to); moved != tc.moved {
			t.Errorf("TagMoved(%q, %q) = %t, want %t", tc.from, tc.to, moved, tc.moved)
		}
	}
}
