package git

import (
	"errors"
	"os"
	slashpath "path"
	"path/filepath"
	"strings"
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

// FuzzTargetFile resolves arbitrary source paths, targets and application
// names in a checkout with links in and out of it: whatever it accepts is
// a clean relative path whose every existing part resolves inside the
// checkout and outside .git, and whose file is not a link.
func FuzzTargetFile(f *testing.F) {
	for _, seed := range [][4]string{
		{"apps/web", "", "web", "0"}, {"apps/web", "values.yaml", "web", "2"}, {"../..", "", "a", "2"},
		{"", "/../../values.yaml", "a", "2"}, {"out/new/deeper", "", "a", "0"}, {"apps/dangling/sub", "", "a", "0"},
		{"apps/gitdir", "config", "a", "2"}, {"apps/web", "linked.yaml", "a", "2"}, {"/etc", "passwd", "a", "1"},
		{"apps/alias", "", "a", "1"}, {"apps/x/../web", "/apps/web/values.yaml", "..", "2"}, {".", ".git/hooks/pre-commit", "a", "2"},
	} {
		f.Add(seed[0], seed[1], seed[2], seed[3][0]-'0')
	}
	root, _ := traversalRepo(f)
	realRoot, err := filepath.EvalSymlinks(root)
	if err != nil {
		f.Fatal(err)
	}
	inside := func(p string) bool {
		return (p == realRoot || strings.HasPrefix(p, realRoot+"/")) && p != realRoot+"/.git" && !strings.HasPrefix(p, realRoot+"/.git/")
	}
	f.Fuzz(func(t *testing.T, srcPath, target, app string, kind uint8) {
		c := Change{App: app, Path: srcPath, Target: Target{Kind: TargetKind(kind % 3), Path: target}}
		rel, _, err := targetFile(root, c)
		if err != nil {
			if !errors.Is(err, ErrInvalidChange) {
				t.Fatalf("error %v is not ErrInvalidChange", err)
			}
			return
		}
		if rel != slashpath.Clean(rel) || slashpath.IsAbs(rel) || rel == ".." || strings.HasPrefix(rel, "../") {
			t.Fatalf("accepted %q", rel)
		}
		parts := strings.Split(rel, "/")
		for i := range parts {
			p := filepath.Join(root, filepath.FromSlash(strings.Join(parts[:i+1], "/")))
			fi, err := os.Lstat(p)
			if err != nil {
				break // missing from here on: created as plain folders
			}
			if i == len(parts)-1 && fi.Mode()&os.ModeSymlink != 0 {
				t.Fatalf("accepted %q, a link", rel)
			}
			if resolved, err := filepath.EvalSymlinks(p); err != nil || !inside(resolved) {
				t.Fatalf("accepted %q whose part %q resolves to %q (%v)", rel, strings.Join(parts[:i+1], "/"), resolved, err)
			}
		}
	})
}
