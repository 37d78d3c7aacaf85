package git

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// traversalRepo is a checkout with links in and out of it, and a folder
// outside it that must stay empty:
//
//	apps/web/kustomization.yaml, apps/web/values.yaml
//	apps/web/linked.yaml -> <outside>/values.yaml   (a file link out)
//	out                  -> <outside>               (a folder link out)
//	apps/dangling        -> <outside>/missing       (a link to nothing)
//	apps/gitdir          -> ../.git                 (a link into .git)
//	apps/alias           -> web                     (a link that stays inside)
func traversalRepo(tb testing.TB) (root, outside string) {
	tb.Helper()
	root, outside = filepath.Join(tb.TempDir(), "repo"), tb.TempDir()
	files := map[string]string{
		"apps/web/kustomization.yaml": "images:\n- name: nginx\n  newTag: 1.0.0\n",
		"apps/web/values.yaml":        "image:\n  tag: 1.0.0\n",
		".git/config":                 "[core]\n",
	}
	for name, content := range files {
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			tb.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(outside, "values.yaml"), []byte("image:\n  tag: 1.0.0\n"), 0o644); err != nil {
		tb.Fatal(err)
	}
	for link, target := range map[string]string{
		"apps/web/linked.yaml": filepath.Join(outside, "values.yaml"),
		"out":                  outside,
		"apps/dangling":        filepath.Join(outside, "missing"),
		"apps/gitdir":          filepath.Join("..", ".git"),
		"apps/alias":           "web",
	} {
		if err := os.Symlink(target, filepath.Join(root, filepath.FromSlash(link))); err != nil {
			tb.Fatal(err)
		}
	}
	return root, outside
}

// snapshot lists every file under dir with its content.
func snapshot(tb testing.TB, dir string) map[string]string {
	tb.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		if d.Type()&fs.ModeSymlink != 0 {
			target, err := os.Readlink(p)
			out[p] = "-> " + target
			return err
		}
		b, err := os.ReadFile(p)
		out[p] = string(b)
		return err
	})
	if err != nil {
		tb.Fatal(err)
	}
	return out
}

// Write-back never touches a file outside the checkout, nor in .git:
// "..", absolute source paths, "$ref/../.." targets (gitChange makes them
// "/../.."), links out of the repository (to a file, a folder, a folder
// whose subfolders do not exist yet, nothing) and links into .git are
// refused with ErrInvalidChange, and nothing is written anywhere. Absolute
// target paths are read from the repository root, as Argo CD does.
func TestWriteBackPathTraversal(t *testing.T) {
	img := []Image{{Name: "nginx", NewTag: "2.0.0"}}
	tests := []struct {
		name    string
		change  Change
		wantRel string // "" means refused
	}{
		{"dots in the source path", Change{App: "a", Path: "../..", Target: Target{Kind: TargetHelmValues}}, ""},
		{"dots in the target", Change{App: "a", Path: "apps/web", Target: Target{Kind: TargetHelmValues, Path: "../../../etc/passwd"}}, ""},
		{"dots hidden in the middle", Change{App: "a", Path: "apps/web/../../..", Target: Target{Kind: TargetKustomization}}, ""},
		{"$ref/../.. target", Change{App: "a", Target: Target{Kind: TargetHelmValues, Path: "/../../values.yaml"}}, ""},
		{"absolute source path", Change{App: "a", Path: "/etc", Target: Target{Kind: TargetHelmValues, Path: "passwd"}}, ""},
		{"absolute source path, argocd-source", Change{App: "a", Path: "/tmp"}, ""},
		{"application name with a slash", Change{App: "../../x", Path: "apps/web"}, ""},
		{"into .git", Change{App: "a", Path: ".git", Target: Target{Kind: TargetHelmValues, Path: "config"}}, ""},
		{"into .git through dots", Change{App: "a", Path: "apps/..", Target: Target{Kind: TargetHelmValues, Path: ".git/config"}}, ""},
		{"into .git through a link", Change{App: "a", Path: "apps/gitdir", Target: Target{Kind: TargetHelmValues, Path: "config"}}, ""},
		{"the target file is a link out", Change{App: "a", Path: "apps/web", Target: Target{Kind: TargetHelmValues, Path: "linked.yaml"}}, ""},
		{"a folder link out", Change{App: "a", Path: "out", Target: Target{Kind: TargetHelmValues}}, ""},
		{"a folder link out, new subfolders", Change{App: "a", Path: "out/new/deeper"}, ""},
		{"a link to nothing", Change{App: "a", Path: "apps/dangling/sub"}, ""},
		{"the repository root itself", Change{App: "a", Target: Target{Kind: TargetHelmValues, Path: "/"}}, ""},
		// Allowed: these stay inside.
		{"absolute target is repository-relative", Change{App: "a", Path: "somewhere", Target: Target{Kind: TargetHelmValues, Path: "/apps/web/values.yaml"},
			Scope: &Scope{Sources: []string{"somewhere"}, Files: []string{"apps/web/values.yaml"}}}, "apps/web/values.yaml"},
		{"a link that stays inside", Change{App: "a", Path: "apps/alias", Target: Target{Kind: TargetKustomization}}, "apps/alias/kustomization.yaml"},
		{"dots that stay inside", Change{App: "a", Path: "apps/x/../web", Target: Target{Kind: TargetHelmValues}}, "apps/web/values.yaml"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root, outside := traversalRepo(t)
			beforeOut, beforeRoot := snapshot(t, outside), snapshot(t, filepath.Join(root, ".git"))
			tt.change.Images = img

			rel, _, err := targetFile(root, tt.change)
			if tt.wantRel == "" {
				if !errors.Is(err, ErrInvalidChange) {
					t.Fatalf("targetFile = %q, %v; want ErrInvalidChange", rel, err)
				}
			} else if err != nil || rel != tt.wantRel {
				t.Fatalf("targetFile = %q, %v; want %q", rel, err, tt.wantRel)
			}

			// The whole edit step agrees, and writes nothing out of place.
			w := &Writer{}
			_, files, failed, err := w.edit(root, []Change{tt.change})
			if err != nil {
				t.Fatal(err)
			}
			if tt.wantRel == "" {
				if len(failed) != 1 || !errors.Is(failed[0], ErrInvalidChange) || len(files) != 0 {
					t.Fatalf("edit: files %v, failed %v; want the change refused", files, failed)
				}
				if !strings.Contains(failed[0].Error(), "outside the repository") && !strings.Contains(failed[0].Error(), "link") &&
					!strings.Contains(failed[0].Error(), "application name") {
					t.Errorf("error %q does not say why", failed[0])
				}
			} else if diff := cmp.Diff([]string{tt.wantRel}, files); diff != "" || len(failed) != 0 {
				t.Fatalf("edit: failed %v, files (-want +got):\n%s", failed, diff)
			}
			if diff := cmp.Diff(beforeOut, snapshot(t, outside)); diff != "" {
				t.Errorf("files outside the checkout changed (-before +after):\n%s", diff)
			}
			if diff := cmp.Diff(beforeRoot, snapshot(t, filepath.Join(root, ".git"))); diff != "" {
				t.Errorf(".git changed (-before +after):\n%s", diff)
			}
		})
	}
}
