package controller

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/crowsnest-dev/crowsnest/controller/imageupdate"
	"github.com/crowsnest-dev/crowsnest/watcher"
)

// The branch a Git change is written to: the git-branch annotation's, or
// the source's targetRevision when Git could push to it. A revision that
// is no branch (a Helm range, "a..b") fails this Application's change,
// naming the field, before it joins a batch with other Applications'.
func TestGitChangeBranch(t *testing.T) {
	single := func(rev string) *watcher.App {
		return &watcher.App{Name: "web", Sources: []watcher.Source{{RepoURL: "https://git.example.com/apps.git", Path: "web", TargetRevision: rev}}}
	}
	multi := &watcher.App{Name: "web", MultiSource: true, Sources: []watcher.Source{
		{RepoURL: "https://charts.example.com", Chart: "web", TargetRevision: "1.*"},
		{RepoURL: "https://git.example.com/apps.git", Path: "web", TargetRevision: "release..1"},
	}}
	tests := []struct {
		name        string
		app         *watcher.App
		branch      string // git-branch annotation's base
		push        string // and target
		idx         int
		want, error string
	}{
		{name: "revision", app: single("main"), want: "main"},
		{name: "HEAD", app: single("HEAD"), want: ""},
		{name: "annotation over the revision", app: single("1.*"), branch: "main", want: "main"},
		{name: "target on the revision", app: single("release"), push: "upd-{{.SHA256}}", want: "release:upd-{{.SHA256}}"},
		{name: "target without a revision", app: single(""), push: "upd-{{.SHA256}}", want: "HEAD:upd-{{.SHA256}}"},
		{name: "helm range", app: single("1.*"),
			error: `git write-back: spec.source.targetRevision: invalid branch name "1.*": contains '*'; name the branch to write to with the git-branch annotation`},
		{name: "second source", app: multi, idx: 1,
			error: `git write-back: spec.sources[1].targetRevision: invalid branch name "release..1": contains ".."; name the branch to write to with the git-branch annotation`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spec := &imageupdate.Spec{WriteBack: imageupdate.WriteBack{Method: imageupdate.MethodGit,
				Target: imageupdate.Target{Kind: imageupdate.TargetArgoCDSource}, Branch: tt.branch, PushBranch: tt.push}}
			changes := []imageupdate.Change{{Alias: "web", Image: "ghcr.io/org/web", To: "2.0.0", SourceIndex: tt.idx}}
			chs, err := gitChanges(tt.app, spec, changes)
			got, gotErr := "", ""
			if err != nil {
				gotErr = err.Error()
			} else {
				got = chs[0].Branch
			}
			if diff := cmp.Diff(tt.want+"|"+tt.error, got+"|"+gotErr); diff != "" {
				t.Errorf("branch|error (-want +got):\n%s", diff)
			}
		})
	}
}
