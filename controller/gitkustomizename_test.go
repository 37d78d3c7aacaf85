package controller

import (
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/crowsnest-dev/crowsnest/controller/imageupdate"
	"github.com/crowsnest-dev/crowsnest/internal/testgit"
	"github.com/crowsnest-dev/crowsnest/watcher"
	gitwb "github.com/crowsnest-dev/crowsnest/writeback/git"
)

// With <alias>.kustomize.image-name set, Git write-back edits the
// kustomization's entry of that name and points it at the image itself:
// name, newName and newTag, as argocd-image-updater writes them. Without
// newName the name would resolve to another image (here Docker Hub's
// storefront).
func TestGitKustomizeImageNameWritesNewName(t *testing.T) {
	srv := testgit.Start(t, testgit.Options{})
	url := srv.CreateRepo(t, "deploy")
	srv.Seed(t, "deploy", "main", map[string]string{"shop/kustomization.yaml": "images:\n- name: storefront\n  newTag: 1.0.0\n"}, "seed")
	app := &watcher.App{Name: "shop", Namespace: "argocd", Sources: []watcher.Source{{RepoURL: url, Path: "shop", TargetRevision: "main"}}}
	spec := &imageupdate.Spec{WriteBack: imageupdate.WriteBack{Method: imageupdate.MethodGit, Target: imageupdate.Target{Kind: imageupdate.TargetKustomization}}}
	changes := []imageupdate.Change{{Alias: "front", Image: "ghcr.io/org/storefront", KustomizeName: "storefront", From: "1.0.0", To: "1.1.0", SourceIndex: -1}}
	chs, err := gitChanges(app, spec, changes)
	if err != nil {
		t.Fatal(err)
	}
	w := &gitwb.Writer{CacheDir: filepath.Join(t.TempDir(), "cache")}
	if _, err := w.Apply(t.Context(), chs); err != nil {
		t.Fatal(err)
	}
	got, _ := srv.ReadFile(t, "deploy", "main", "shop/kustomization.yaml")
	want := "images:\n- name: storefront\n  newTag: 1.1.0\n  newName: ghcr.io/org/storefront\n"
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("kustomization.yaml (-want +got):\n%s", diff)
	}
}
