package git

import (
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// Selection never hands the writer a tag outside the OCI grammar, but the
// writer does not rely on it: a value with newlines, YAML or JSON
// metacharacters is either refused or written so that the file stays
// valid YAML and reads back exactly that value, with nothing else added.
func TestHostileValuesNeverBreakTheFile(t *testing.T) {
	hostile := []string{"9.9.9\nimage: evil", "x\r\ny: 1", `zz"},{"a":"b`, "../x", "a: {b: c}", "#x", "'q", "- item", "&a *a",
		"!!binary x", "%TAG", "@x", "`x`", "x\ty", "\u2028", strings.Repeat("z", 1024)}
	original := "images:\n- name: nginx\n  newTag: 1.0.0\nimage:\n  tag: 1.0.0\n"
	for _, kind := range []TargetKind{TargetKustomization, TargetHelmValues, TargetArgoCDSource} {
		for _, tag := range hostile {
			in := []byte(original)
			if kind == TargetArgoCDSource {
				in = nil
			}
			out, _, _, err := editFile(in, kind, SourceKustomize, Image{Name: "nginx", NewTag: tag})
			if err != nil {
				continue // refused: nothing is written
			}
			var doc map[string]any
			if err := yaml.Unmarshal(out, &doc); err != nil {
				t.Errorf("%v, tag %q: wrote invalid YAML (%v):\n%s", kind, tag, err, out)
				continue
			}
			var got any
			switch kind {
			case TargetKustomization:
				got, _ = lookup(doc["images"].([]any)[0], []string{"newTag"})
			case TargetHelmValues:
				got, _ = lookup(doc, []string{"image", "tag"})
			default:
				got, _ = lookup(doc, []string{"kustomize", "images"})
				got = got.([]any)[0]
				tag = "nginx:" + tag
			}
			if got != tag {
				t.Errorf("%v: wrote %q, reads back %q:\n%s", kind, tag, got, out)
			}
			wantKeys := 2 // images and image
			if kind == TargetArgoCDSource {
				wantKeys = 1 // kustomize
			}
			if len(doc) != wantKeys {
				t.Errorf("%v, tag %q: top-level keys changed:\n%s", kind, tag, out)
			}
		}
	}
}
