package git

import (
	"os"
	"path/filepath"
	"testing"

	"go.yaml.in/yaml/v3"
)

func addGoldenSeeds(f *testing.F, file string, add func(content []byte)) {
	f.Helper()
	matches, _ := filepath.Glob(filepath.Join("testdata", "edit", "*", "original", file))
	for _, m := range matches {
		b, err := os.ReadFile(m)
		if err != nil {
			f.Fatal(err)
		}
		add(b)
	}
}

// lookup walks decoded YAML along a dotted path.
func lookup(v any, path []string) (any, bool) {
	for _, p := range path {
		var ok bool
		switch m := v.(type) {
		case map[string]any:
			v, ok = m[p]
		case map[any]any:
			v, ok = m[p]
		}
		if !ok {
			return nil, false
		}
	}
	return v, true
}

func FuzzEditKustomization(f *testing.F) {
	addGoldenSeeds(f, "kustomization.yaml", func(b []byte) { f.Add(b, "nginx", "1.2.3", false) })
	f.Add([]byte("images:\n- name: nginx\n  newTag: \"1\"\n"), "nginx", "2", true)
	f.Add([]byte("images: []\n"), "a/b", "v1", false)
	f.Add([]byte("images:\n"), "a", "1.0", true)
	f.Add([]byte("{images: [{name: x, newTag: y}]}"), "x", "z", false)
	f.Fuzz(func(t *testing.T, src []byte, name, tag string, digest bool) {
		if name == "" || tag == "" {
			return
		}
		im := Image{Name: name, NewTag: tag}
		if digest {
			im = Image{Name: name, Digest: tag}
		}
		out, _, _, err := editFile(src, TargetKustomization, SourceKustomize, im)
		if err != nil {
			return
		}
		var doc any
		if err := yaml.Unmarshal(out, &doc); err != nil {
			t.Fatalf("output does not parse: %v\n%s", err, out)
		}
		images, _ := lookup(doc, []string{"images"})
		list, _ := images.([]any)
		field := "newTag"
		if digest {
			field = "digest"
		}
		for _, entry := range list {
			if n, _ := lookup(entry, []string{"name"}); n != name {
				continue
			}
			if v, _ := lookup(entry, []string{field}); v == tag {
				return
			}
		}
		t.Fatalf("no images entry %s with %s\n%s", name, tag, out)
	})
}

func FuzzEditHelmValues(f *testing.F) {
	addGoldenSeeds(f, "values.yaml", func(b []byte) { f.Add(b, "image.tag", "1.2.3") })
	f.Add([]byte("image:\n  tag: \"1\" # c\n"), "image.tag", "2")
	f.Add([]byte("a:\n  b: |\n    x\n    y\nc: 1\n"), "a.d.e", "v")
	f.Add([]byte("# only a comment\n"), "x.y", "true")
	f.Add([]byte("a: ~\n"), "a.b", "null")
	f.Add([]byte("a: &x {b: 1}\nc: *x\n"), "c.b", "2")
	f.Fuzz(func(t *testing.T, src []byte, key, value string) {
		steps := dotted(key)
		for _, s := range steps {
			if s.kind != stepKey || s.key == "" {
				return // indexes need existing lists; covered by the golden test
			}
		}
		out, _, _, err := editFile(src, TargetHelmValues, SourceHelm, Image{Name: "img", NewTag: value, HelmImageTag: key})
		if err != nil {
			return
		}
		var doc any
		if err := yaml.Unmarshal(out, &doc); err != nil {
			t.Fatalf("output does not parse: %v\n%s", err, out)
		}
		var path []string
		for _, s := range steps {
			path = append(path, s.key)
		}
		got, ok := lookup(doc, path)
		if !ok || got != value {
			t.Fatalf("%s = %#v (found %v), want %q\n--- in\n%s\n--- out\n%s", key, got, ok, value, src, out)
		}
	})
}
