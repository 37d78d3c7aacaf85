package controller

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/crowsnest-dev/crowsnest/controller/imageupdate"
	"github.com/crowsnest-dev/crowsnest/internal/testgit"
	"github.com/crowsnest-dev/crowsnest/watcher"
	gitwb "github.com/crowsnest-dev/crowsnest/writeback/git"
)

// A write-back target from annotations or policies that climbs out of the
// repository, "$values/../..", "../.." or an absolute source path, turns
// into a change the Git writer refuses: nothing is committed and the
// repository's only commit stays the seed.
func TestGitChangeCannotLeaveTheRepository(t *testing.T) {
	srv := testgit.Start(t, testgit.Options{})
	url := srv.CreateRepo(t, "values")
	seed := srv.Seed(t, "values", "main", map[string]string{"prod/values.yaml": "image:\n  tag: 1.0.0\n"}, "seed")
	multi := &watcher.App{Name: "web", Namespace: "argocd", Sources: []watcher.Source{
		{RepoURL: "https://charts.example.com", Chart: "web", TargetRevision: "1.0.0"},
		{RepoURL: url, TargetRevision: "main", Ref: "values"},
	}}
	single := &watcher.App{Name: "web", Namespace: "argocd", Sources: []watcher.Source{{RepoURL: url, Path: "prod", TargetRevision: "main"}}}
	tests := []struct {
		name   string
		app    *watcher.App
		target imageupdate.Target
	}{
		{"$ref/../..", multi, imageupdate.Target{Kind: imageupdate.TargetHelmValues, Path: "$values/../../etc/values.yaml"}},
		{"$ref/x/../../..", multi, imageupdate.Target{Kind: imageupdate.TargetHelmValues, Path: "$values/prod/../../../values.yaml"}},
		{"../.. from the source path", single, imageupdate.Target{Kind: imageupdate.TargetHelmValues, Path: "../../values.yaml"}},
		{"kustomization ../..", single, imageupdate.Target{Kind: imageupdate.TargetKustomization, Path: "../../.."}},
		{"into .git", single, imageupdate.Target{Kind: imageupdate.TargetHelmValues, Path: "/.git/config"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spec := &imageupdate.Spec{WriteBack: imageupdate.WriteBack{Method: imageupdate.MethodGit, Target: tt.target}}
			changes := []imageupdate.Change{{Alias: "web", Image: "ghcr.io/org/web", To: "2.0.0", SourceIndex: -1}}
			chs, err := gitChanges(tt.app, spec, changes)
			if err != nil {
				t.Fatalf("gitChanges: %v", err)
			}
			w := &gitwb.Writer{CacheDir: filepath.Join(t.TempDir(), "cache")}
			res, err := w.Apply(t.Context(), chs)
			if !errors.Is(err, gitwb.ErrInvalidChange) || !strings.Contains(err.Error(), "outside the repository") {
				t.Fatalf("Apply error = %v, want ErrInvalidChange saying the path is outside the repository", err)
			}
			if len(res) != 1 || res[0].CommitSHA != "" || srv.Head(t, "values", "main") != seed {
				t.Fatalf("results %+v: something was committed", res)
			}
		})
	}
}
