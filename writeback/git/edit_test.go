package git

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"go.yaml.in/yaml/v3"
)

const testDigest = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

// TestEditGolden edits testdata/edit/<case>/original/<file> and compares
// with expected/<file> byte for byte.
func TestEditGolden(t *testing.T) {
	tests := []struct {
		name   string
		file   string
		kind   TargetKind
		src    SourceType
		images []Image
		from   []string
	}{
		{
			name: "kustomization-update", file: "kustomization.yaml", kind: TargetKustomization,
			images: []Image{
				{Name: "ghcr.io/acme/web", NewTag: "1.2.0"},
				{Name: "ghcr.io/acme/api", NewTag: "v3"},
				{Name: "redis", NewTag: "7.2"},
			},
			from: []string{"1.0.0", "v2", "7.0"},
		},
		{
			name: "kustomization-add", file: "kustomization.yaml", kind: TargetKustomization,
			images: []Image{{Name: "ghcr.io/acme/worker", NewName: "registry.example.com/acme/worker", NewTag: "v5"}},
			from:   []string{""},
		},
		{
			name: "kustomization-nokey", file: "kustomization.yaml", kind: TargetKustomization,
			images: []Image{{Name: "nginx", Digest: testDigest}},
			from:   []string{""},
		},
		{
			name: "kustomization-digest", file: "kustomization.yaml", kind: TargetKustomization,
			images: []Image{{Name: "nginx", Digest: testDigest}},
			from:   []string{""},
		},
		{
			name: "helmvalues", file: "values.yaml", kind: TargetHelmValues,
			images: []Image{
				{Name: "ghcr.io/acme/web", NewTag: "1.1.0", HelmImageTag: "image.tag"},
				{Name: "ghcr.io/acme/side", NewTag: "v9", HelmImageTag: "sidecar.image.tag"},
				{Name: "busybox", NewTag: "1.37", HelmImageSpec: "containers.0.image"},
				{Name: "ghcr.io/acme/worker", NewTag: "2.0", HelmImageName: "worker.image.name", HelmImageTag: "worker.image.tag"},
			},
			from: []string{"1.0.0", "", "1.36", ""},
		},
		{
			name: "argocd-source-kustomize", file: ".argocd-source-web.yaml", kind: TargetArgoCDSource, src: SourceKustomize,
			images: []Image{
				{Name: "ghcr.io/acme/web", NewTag: "1.1.0"},
				{Name: "ghcr.io/acme/api", KustomizeName: "api", NewTag: "v2"},
			},
			from: []string{"1.0.0", ""},
		},
		{
			name: "argocd-source-helm-create", file: ".argocd-source-web.yaml", kind: TargetArgoCDSource, src: SourceHelm,
			images: []Image{{Name: "ghcr.io/acme/web", NewTag: "1.1.0"}},
			from:   []string{""},
		},
		{
			name: "argocd-source-helm-update", file: ".argocd-source-web.yaml", kind: TargetArgoCDSource, src: SourceHelm,
			images: []Image{{Name: "ghcr.io/acme/web", NewTag: "1.1.0"}},
			from:   []string{"1.0.0"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := filepath.Join("testdata", "edit", tt.name)
			content, err := os.ReadFile(filepath.Join(dir, "original", tt.file))
			if err != nil && !os.IsNotExist(err) {
				t.Fatal(err)
			}
			want, err := os.ReadFile(filepath.Join(dir, "expected", tt.file))
			if err != nil {
				t.Fatal(err)
			}
			var from []string
			for _, im := range tt.images {
				var f string
				var changed bool
				content, f, changed, err = editFile(content, tt.kind, tt.src, im)
				if err != nil {
					t.Fatal(err)
				}
				if !changed {
					t.Fatalf("%s: not changed", im.Name)
				}
				from = append(from, f)
			}
			if diff := cmp.Diff(string(want), string(content)); diff != "" {
				t.Errorf("file (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.from, from); diff != "" {
				t.Errorf("old versions (-want +got):\n%s", diff)
			}
			// A second pass changes nothing.
			for _, im := range tt.images {
				again, _, changed, err := editFile(content, tt.kind, tt.src, im)
				if err != nil || changed || !bytes.Equal(again, content) {
					t.Fatalf("second edit of %s: changed=%v err=%v", im.Name, changed, err)
				}
			}
		})
	}
}

func TestEditYAMLFallsBackToReemitting(t *testing.T) {
	// A flow mapping cannot be edited in place; the document is re-emitted
	// and still means the same plus the change.
	src := []byte("image: {repository: web, tag: \"1\"}\n")
	out, old, changed, reformatted, err := editYAML(src, edit{path: dotted("image.tag"), set: str("2")})
	if err != nil || !changed || old != "1" {
		t.Fatalf("changed=%v old=%q err=%v", changed, old, err)
	}
	var got map[string]map[string]string
	if err := yaml.Unmarshal(out, &got); err != nil {
		t.Fatal(err)
	}
	if got["image"]["tag"] != "2" || got["image"]["repository"] != "web" || !reformatted {
		t.Fatalf("got %v reformatted=%v\n%s", got, reformatted, out)
	}
}

func TestEditYAMLErrors(t *testing.T) {
	tests := []struct {
		name string
		src  string
		path string
	}{
		{"not a mapping", "image: web:1\n", "image.tag"},
		{"not a scalar", "image:\n  tag:\n    a: b\n", "image.tag"},
		{"index out of range", "c:\n- a\n", "c.3"},
		{"two documents", "a: 1\n---\nb: 2\n", "a"},
		{"top level list", "- a\n", "a"},
		{"broken", "a: [\n", "a"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, _, _, _, err := editYAML([]byte(tt.src), edit{path: dotted(tt.path), set: str("x")}); err == nil {
				t.Fatal("no error")
			}
		})
	}
}

func TestEditKeepsCRLF(t *testing.T) {
	src := []byte("# values\r\nimage:\r\n  tag: v1 # pinned\r\n")
	out, _, _, _, err := editYAML(src, edit{path: dotted("image.tag"), set: str("v2")})
	if err != nil {
		t.Fatal(err)
	}
	out, _, _, _, err = editYAML(out, edit{path: dotted("image.name"), set: str("web")})
	if err != nil {
		t.Fatal(err)
	}
	want := "# values\r\nimage:\r\n  tag: v2 # pinned\r\n  name: web\r\n"
	if diff := cmp.Diff(want, string(out)); diff != "" {
		t.Fatalf("(-want +got):\n%s", diff)
	}
}
