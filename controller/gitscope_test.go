package controller

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/crowsnest-dev/crowsnest/controller/imageupdate"
	"github.com/crowsnest-dev/crowsnest/watcher"
	gitwb "github.com/crowsnest-dev/crowsnest/writeback/git"
)

// A Git change carries what its Application renders from in the
// repository it writes: its source paths there, its Helm value files as
// Argo CD resolves them, and the $ref value files of its other sources.
func TestGitChangeScope(t *testing.T) {
	const repo = "https://git.example.com/org/apps.git"
	helm := func(files ...string) *watcher.HelmSource { return &watcher.HelmSource{ValueFiles: files} }
	tests := []struct {
		name    string
		sources []watcher.Source
		wb      imageupdate.WriteBack
		idx     int
		want    *gitwb.Scope
	}{
		{
			name:    "kustomize overlay",
			sources: []watcher.Source{{RepoURL: repo, Path: "team-b/prod"}},
			want:    &gitwb.Scope{Sources: []string{"team-b/prod"}},
		},
		{
			name: "helm value files",
			sources: []watcher.Source{{RepoURL: repo, Path: "charts/web", Helm: helm(
				"values-prod.yaml", "../../envs/prod/values.yaml", "/common/values.yaml", "https://example.com/values.yaml")}},
			wb: imageupdate.WriteBack{Target: imageupdate.Target{Kind: imageupdate.TargetHelmValues, Path: "../../envs/prod/values.yaml"}},
			want: &gitwb.Scope{Sources: []string{"charts/web"},
				Files: []string{"charts/web/values-prod.yaml", "envs/prod/values.yaml", "common/values.yaml"}},
		},
		{
			name: "a chart from a Helm repository with $values",
			sources: []watcher.Source{
				{RepoURL: "https://charts.example.com", Chart: "web", Helm: helm("$values/team-b/prod.yaml", "chart-values.yaml")},
				{RepoURL: "https://GIT.example.com/org/apps", Ref: "values"},
			},
			wb:   imageupdate.WriteBack{Target: imageupdate.Target{Kind: imageupdate.TargetHelmValues, Path: "$values/team-b/prod.yaml"}},
			want: &gitwb.Scope{Files: []string{"team-b/prod.yaml"}},
		},
		{
			name: "multi-source: only the sources in the written repository",
			sources: []watcher.Source{
				{RepoURL: repo, Path: "team-b/prod"},
				{RepoURL: "https://git.example.com/org/other", Path: "team-b/extra", Helm: helm("values.yaml")},
				{RepoURL: repo, Path: "team-b/monitoring"},
			},
			want: &gitwb.Scope{Sources: []string{"team-b/prod", "team-b/monitoring"}},
		},
		{
			name:    "git-repository names another repository",
			sources: []watcher.Source{{RepoURL: "https://charts.example.com", Chart: "web", Path: "", Helm: helm("values.yaml")}},
			wb:      imageupdate.WriteBack{Repository: "https://git.example.com/org/deploy"},
			want:    &gitwb.Scope{Sources: []string{""}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			app := &watcher.App{Namespace: "team-b", Name: "web", Sources: tt.sources, MultiSource: len(tt.sources) > 1}
			tt.wb.Method = imageupdate.MethodGit
			spec := &imageupdate.Spec{WriteBack: tt.wb}
			chs, err := gitChanges(app, spec, []imageupdate.Change{{Image: "ghcr.io/org/web", To: "2.0.0", SourceIndex: tt.idx}})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, chs[0].Scope); diff != "" {
				t.Errorf("Scope (-want +got):\n%s", diff)
			}
		})
	}
}
