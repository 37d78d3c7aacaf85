package git

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/crowsnest-dev/crowsnest/internal/testgit"
)

// monorepo is a server with one repository "apps" holding
// testdata/scope/monorepo: a folder per team, a shared folder and a
// values folder, as a shared GitOps repository has them.
func monorepo(t *testing.T) (s *testgit.Server, url string, files map[string]string) {
	t.Helper()
	root := filepath.Join("testdata", "scope", "monorepo")
	files = map[string]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		rel, _ := filepath.Rel(root, p)
		files[filepath.ToSlash(rel)] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	s = testgit.Start(t, testgit.Options{})
	url = s.CreateRepo(t, "apps")
	s.Seed(t, "apps", "main", files, "seed")
	return s, url, files
}

// changedFiles are the files of the repository's main branch that differ
// from files.
func changedFiles(t *testing.T, s *testgit.Server, files map[string]string) []string {
	t.Helper()
	var changed []string
	for p, want := range files {
		if got, _ := s.ReadFile(t, "apps", "main", p); got != want {
			changed = append(changed, p)
		}
	}
	return changed
}

// team-b's Application may write only what it renders from: its source
// path's kustomization and what that pulls in, its Helm value files, and
// what the operator allows; another team's files in the same repository
// are refused, whichever target names them, and stay as they were.
func TestWriteScope(t *testing.T) {
	// kustomize.image-name plus newName: the attack rewrites the image
	// team-a's overlay deploys to team-b's.
	kust := []Image{{Name: "ghcr.io/team-b/evil", KustomizeName: "ghcr.io/acme/web", NewName: "ghcr.io/team-b/evil", NewTag: "6.6.6"}}
	helm := []Image{{Name: "ghcr.io/acme/web", NewTag: "2.0.0", HelmImageTag: "image.tag"}}
	overlay := &Scope{Sources: []string{"team-b/prod"}}
	chart := &Scope{Sources: []string{"team-b/chart"}, Files: []string{"team-b/envs/prod/values.yaml"}}
	refValues := &Scope{Sources: []string{"team-b/chart"}, Files: []string{"values/team-b/prod.yaml"}}
	widened := &Scope{Sources: []string{"team-b/prod"}, Allowed: []string{"/shared/**"}}
	k := func(p string) Target { return Target{Kind: TargetKustomization, Path: p} }
	h := func(p string) Target { return Target{Kind: TargetHelmValues, Path: p} }
	tests := []struct {
		name   string
		path   string
		target Target
		scope  *Scope
		want   string // the file written, or named by the refusal
		ok     bool
	}{
		{"its overlay", "team-b/prod", k(""), overlay, "team-b/prod/kustomization.yaml", true},
		{"its base, from the overlay's resources", "team-b/prod", k("../base"), overlay, "team-b/base/kustomization.yaml", true},
		{"a shared component it includes", "team-b/prod", k("/shared/components/logging"), overlay, "shared/components/logging/kustomization.yaml", true},
		{"its .argocd-source file", "team-b/prod", Target{Kind: TargetArgoCDSource}, overlay, "team-b/prod/.argocd-source-web.yaml", true},
		{"another team's overlay", "team-b/prod", k("/team-a/prod"), overlay, "team-a/prod/kustomization.yaml", false},
		{"another team's overlay, by dots", "team-b/prod", k("../../team-a/prod/kustomization.yaml"), overlay, "team-a/prod/kustomization.yaml", false},
		{"another team's base", "team-b/prod", k("../../team-a/base"), overlay, "team-a/base/kustomization.yaml", false},
		{"a shared folder it does not include", "team-b/prod", k("/shared/platform"), overlay, "shared/platform/kustomization.yaml", false},
		{"no scope is the source path alone", "team-b/prod", k("/team-a/prod"), nil, "team-a/prod/kustomization.yaml", false},
		{"no scope, its own overlay", "team-b/prod", k(""), nil, "team-b/prod/kustomization.yaml", true},
		{"helm: its chart's values.yaml", "team-b/chart", h(""), chart, "team-b/chart/values.yaml", true},
		{"helm: a value file in another folder", "team-b/chart", h("/team-b/envs/prod/values.yaml"), chart, "team-b/envs/prod/values.yaml", true},
		{"helm: another team's value file", "team-b/chart", h("/team-a/envs/prod/values.yaml"), chart, "team-a/envs/prod/values.yaml", false},
		{"helm: $values file", "", h("/values/team-b/prod.yaml"), refValues, "values/team-b/prod.yaml", true},
		{"helm: $values, another team's file", "", h("/values/team-a/prod.yaml"), refValues, "values/team-a/prod.yaml", false},
		{"widened by tenancy.writePaths", "team-b/prod", k("/shared/platform"), widened, "shared/platform/kustomization.yaml", true},
		{"widened only by its globs", "team-b/prod", k("/team-a/prod"), widened, "team-a/prod/kustomization.yaml", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, url, files := monorepo(t)
			c := Change{App: "web", Key: "team-b/web", RepoURL: url, Branch: "main", Path: tt.path, Target: tt.target, Scope: tt.scope, Images: kust}
			if tt.target.Kind == TargetHelmValues {
				c.SourceType, c.Images = SourceHelm, helm
			}
			w := newWriter(t, nil)
			res, err := w.Apply(t.Context(), []Change{c})
			if !tt.ok {
				if !errors.Is(err, ErrOutsideScope) || !errors.Is(err, ErrInvalidChange) {
					t.Fatalf("err = %v, want ErrOutsideScope", err)
				}
				if len(res) != 1 || len(res[0].Failed) != 1 || res[0].Failed[0].Key != "team-b/web" {
					t.Fatalf("results %+v, want team-b/web's change failed", res)
				}
				if msg := err.Error(); !strings.Contains(msg, "renders from: "+tt.want+" (rule: ") || !strings.Contains(msg, "tenancy.writePaths") {
					t.Errorf("error %q names neither the file nor the rule", msg)
				}
				if diff := cmp.Diff([]string(nil), changedFiles(t, s, files)); diff != "" {
					t.Errorf("files changed (-want +got):\n%s", diff)
				}
				return
			}
			if err != nil {
				t.Fatalf("Apply: %v", err)
			}
			if diff := cmp.Diff([]string{tt.want}, res[0].FilesChanged); diff != "" {
				t.Errorf("files written (-want +got):\n%s", diff)
			}
			want := []string{tt.want}
			if _, existed := files[tt.want]; !existed {
				want = nil // a new file: not among the originals
			}
			if diff := cmp.Diff(want, changedFiles(t, s, files)); diff != "" {
				t.Errorf("files changed in the repository (-want +got):\n%s", diff)
			}
		})
	}
}

// One team's refused change fails only itself: the other team's change
// in the same batch is committed. The dry run's Plan says the same.
func TestWriteScopeFailsOnlyItsChange(t *testing.T) {
	s, url, files := monorepo(t)
	img := []Image{{Name: "ghcr.io/acme/web", NewTag: "2.0.0"}}
	evil := Change{App: "web", Key: "team-b/web", RepoURL: url, Branch: "main", Path: "team-b/prod",
		Target: Target{Kind: TargetKustomization, Path: "/team-a/prod"}, Scope: &Scope{Sources: []string{"team-b/prod"}}, Images: img}
	good := Change{App: "web", Key: "team-a/web", RepoURL: url, Branch: "main", Path: "team-a/prod",
		Target: Target{Kind: TargetKustomization, Path: "../base"}, Scope: &Scope{Sources: []string{"team-a/prod"}}, Images: img}
	w := newWriter(t, nil)

	plans, err := w.Plan(t.Context(), []Change{evil, good})
	if !errors.Is(err, ErrOutsideScope) || len(plans) != 1 {
		t.Fatalf("Plan: %v, %+v", err, plans)
	}
	var planned []string
	for _, f := range plans[0].Files {
		planned = append(planned, f.Path)
	}
	if diff := cmp.Diff([]string{"team-a/base/kustomization.yaml"}, planned); diff != "" {
		t.Errorf("planned files (-want +got):\n%s", diff)
	}
	if len(plans[0].Failed) != 1 || plans[0].Failed[0].Key != "team-b/web" {
		t.Errorf("plan failed %v, want team-b/web's change", plans[0].Failed)
	}

	res, err := w.Apply(t.Context(), []Change{evil, good})
	if !errors.Is(err, ErrOutsideScope) || len(res) != 1 {
		t.Fatalf("Apply: %v, %+v", err, res)
	}
	r := res[0]
	if r.Err != nil || r.CommitSHA == "" || len(r.Failed) != 1 || r.Failed[0].Key != "team-b/web" {
		t.Fatalf("result %+v", r)
	}
	if diff := cmp.Diff([]string{"team-a/base/kustomization.yaml"}, changedFiles(t, s, files)); diff != "" {
		t.Errorf("files changed (-want +got):\n%s", diff)
	}
}

// The walk through kustomizations resolves links, ends on cycles and
// stops at its bounds.
func TestWriteScopeWalk(t *testing.T) {
	dir := t.TempDir()
	write := func(rel, content string) {
		p := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("team-a/prod/kustomization.yaml", "resources: [../base]\n")
	write("team-b/prod/kustomization.yaml", "resources: [../../cycle/a]\n")
	write("cycle/a/kustomization.yaml", "resources: [../b]\n")
	write("cycle/b/kustomization.yaml", "resources: [../a, ../../team-b/prod]\n")
	if err := os.Symlink("../../team-a/prod", filepath.Join(dir, "team-b", "prod", "link")); err != nil {
		t.Fatal(err)
	}
	// A chain deeper than the bound.
	for i := range maxKustomizeDepth + 2 {
		write(fmt.Sprintf("chain/%d/kustomization.yaml", i), fmt.Sprintf("bases: [../%d]\n", i+1))
	}
	write("wrong/kustomization.yaml", "resources: {not: a list}\nbases: [../team-a/prod]\n")
	write("big/kustomization.yaml", "resources: [../team-a/prod]\n#"+strings.Repeat("x", maxKustomizationBytes))

	tests := []struct {
		name   string
		source string
		rel    string
		ok     bool
	}{
		{"a cycle is followed once", "team-b/prod", "cycle/b/kustomization.yaml", true},
		{"a cycle leads nowhere else", "team-b/prod", "team-a/prod/kustomization.yaml", false},
		{"a link to another team's folder it does not include", "team-b/prod", "team-b/prod/link/kustomization.yaml", false},
		{"the end of the bound", "chain/0", fmt.Sprintf("chain/%d/kustomization.yaml", maxKustomizeDepth), true},
		{"past the bound", "chain/0", fmt.Sprintf("chain/%d/kustomization.yaml", maxKustomizeDepth+1), false},
		{"a field of the wrong type is not followed", "wrong", "team-a/prod/kustomization.yaml", false},
		{"an oversized kustomization is not followed", "big", "team-a/prod/kustomization.yaml", false},
		{"another kustomization file name", "team-b/prod", "cycle/a/Kustomization", true},
		{"not a kustomization in a followed folder", "team-b/prod", "cycle/a/deployment.yaml", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := checkScope(dir, Change{App: "web", Scope: &Scope{Sources: []string{tt.source}}}, tt.rel)
			if got := err == nil; got != tt.ok {
				t.Fatalf("checkScope(%s from %s) = %v, want ok %v", tt.rel, tt.source, err, tt.ok)
			}
			if err != nil && !errors.Is(err, ErrOutsideScope) {
				t.Fatalf("err = %v, want ErrOutsideScope", err)
			}
			if past := strings.Contains(tt.name, "past the bound") || strings.Contains(tt.name, "oversized"); err != nil && past != strings.Contains(err.Error(), "followed up to") {
				t.Errorf("err = %v: says it stopped at a bound: %v, want %v", err, !past, past)
			}
		})
	}
}

// Whatever a kustomization holds, following it ends, and a file outside
// the checkout, or in .git, is never in scope.
func FuzzWriteScope(f *testing.F) {
	for _, seed := range [][2]string{
		{"resources: [../base, ../../team-a/prod]\n", "team-a/prod/kustomization.yaml"},
		{"bases: [../../../outside]\ncomponents: [/etc]\n", "../outside/kustomization.yaml"},
		{"resources: [., .., ../.., ../../.git]\n", ".git/config"},
		{"resources: {a: b}\n", "team-b/prod/values.yaml"},
		{"resources: &a [*a]\n", "team-b/prod/kustomization.yaml"},
	} {
		f.Add(seed[0], seed[1])
	}
	dir := f.TempDir()
	for rel, content := range map[string]string{
		"team-a/prod/kustomization.yaml": "resources: [../base]\n",
		"team-a/base/kustomization.yaml": "resources: [../prod]\n",
		".git/config":                    "[core]\n",
	} {
		p := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			f.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			f.Fatal(err)
		}
	}
	f.Fuzz(func(t *testing.T, kustomization, rel string) {
		root := t.TempDir()
		if err := os.CopyFS(root, os.DirFS(dir)); err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(root, "team-b", "prod", "kustomization.yaml")
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(kustomization), 0o644); err != nil {
			t.Fatal(err)
		}
		err := checkScope(root, Change{App: "web", Path: "team-b/prod"}, rel)
		if err != nil && !errors.Is(err, ErrOutsideScope) {
			t.Fatalf("error %v is not ErrOutsideScope", err)
		}
		clean := filepath.ToSlash(filepath.Clean(rel))
		escapes := clean == ".." || strings.HasPrefix(clean, "../") || filepath.IsAbs(rel) || clean == ".git" || strings.HasPrefix(clean, ".git/")
		if err == nil && escapes {
			t.Fatalf("%q is in scope", rel)
		}
	})
}

// A refusal names at most three source paths, each cut short: they are
// the Application author's to write.
func TestShownPaths(t *testing.T) {
	long := strings.Repeat("a", 300)
	tests := []struct {
		in   []string
		want string
	}{
		{nil, "(none in this repository)"},
		{[]string{"", "team-b/prod", "./x/../y/"}, "/, /team-b/prod, /y"},
		{[]string{"a", "b", "c", "d"}, "/a, /b, /c, ..."},
		{[]string{long}, "/" + long[:99] + "..."},
	}
	for _, tt := range tests {
		if diff := cmp.Diff(tt.want, shownPaths(tt.in)); diff != "" {
			t.Errorf("shownPaths(%q) (-want +got):\n%s", tt.in, diff)
		}
	}
}
