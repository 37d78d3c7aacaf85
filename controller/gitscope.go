package controller

import (
	"path"
	"strings"

	"github.com/crowsnest-dev/crowsnest/controller/gitplan"
	"github.com/crowsnest-dev/crowsnest/watcher"
	gitwb "github.com/crowsnest-dev/crowsnest/writeback/git"
)

// renderScope is what app renders from in repoURL, the repository a Git
// change of it writes: the paths of its sources there (ownPath, the
// written source's path, too when own: a git-repository annotation may
// name another repository than the source's), their Helm value files
// (relative to the source path, or to the root when absolute) and the
// $ref value files of its sources that live there. The writer follows
// the kustomizations in the clone.
func renderScope(app *watcher.App, repoURL, ownPath string, own bool) *gitwb.Scope {
	s := &gitwb.Scope{}
	if own {
		s.Sources = append(s.Sources, ownPath)
	}
	repo := gitwb.RepoKey(repoURL)
	for i := range app.Sources {
		src := &app.Sources[i]
		here := src.Chart == "" && gitwb.RepoKey(src.RepoURL) == repo
		listed := own && src.Path == ownPath
		if here && (src.Ref == "" || src.Path != "") && !listed {
			s.Sources = append(s.Sources, src.Path)
		}
		if src.Helm == nil {
			continue
		}
		for _, vf := range src.Helm.ValueFiles {
			if f, ok := valueFile(app, src, here, vf, repo); ok {
				s.Files = append(s.Files, f)
			}
		}
	}
	return s
}

// valueFile is the file a Helm valueFiles entry vf of src names in the
// repository repo, relative to its root, as Argo CD resolves it; ok is
// false for a URL or a file in another repository (here: src is a Git
// source in repo).
func valueFile(app *watcher.App, src *watcher.Source, here bool, vf, repo string) (string, bool) {
	switch {
	case strings.HasPrefix(vf, "$"):
		ref, rest, ok := strings.Cut(vf[1:], "/")
		rs := gitplan.RefSource(app, ref)
		if !ok || rs == nil || gitwb.RepoKey(rs.RepoURL) != repo {
			return "", false
		}
		return rest, true
	case strings.Contains(vf, "://") || !here:
		return "", false
	case strings.HasPrefix(vf, "/"):
		return strings.TrimPrefix(vf, "/"), true
	}
	return path.Join(src.Path, vf), true
}
