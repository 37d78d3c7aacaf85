package controller

import (
	"github.com/crowsnest-dev/crowsnest/controller/gitplan"
	"github.com/crowsnest-dev/crowsnest/controller/imageupdate"
	"github.com/crowsnest-dev/crowsnest/watcher"
	gitwb "github.com/crowsnest-dev/crowsnest/writeback/git"
)

// gitChanges are the Git writer's changes for app: gitplan's mapping of
// the decided changes (one per source written), each with the Scope of
// files app renders from in the repository it writes.
func gitChanges(app *watcher.App, spec *imageupdate.Spec, changes []imageupdate.Change) ([]gitwb.Change, error) {
	plans, err := gitplan.Changes(app, spec, changes)
	if err != nil {
		return nil, err
	}
	out := make([]gitwb.Change, 0, len(plans))
	for i := range plans {
		out = append(out, gitChange(app, &plans[i]))
	}
	return out, nil
}

// gitChange is p as the Git writer takes it.
func gitChange(app *watcher.App, p *gitplan.Change) gitwb.Change {
	ch := gitwb.Change{App: p.App, Project: p.Project, RepoURL: p.RepoURL, Path: p.Path, Branch: p.Branch,
		SourceType: gitwb.SourceKustomize, Target: gitwb.Target{Kind: gitwb.TargetArgoCDSource}}
	if p.Helm {
		ch.SourceType = gitwb.SourceHelm
	}
	switch p.Target.Kind {
	case imageupdate.TargetKustomization:
		ch.Target = gitwb.Target{Kind: gitwb.TargetKustomization, Path: p.Target.Path}
	case imageupdate.TargetHelmValues:
		ch.Target = gitwb.Target{Kind: gitwb.TargetHelmValues, Path: p.Target.Path}
	}
	for i := range p.Images {
		ch.Images = append(ch.Images, gitwb.Image(p.Images[i]))
	}
	ch.Scope = renderScope(app, ch.RepoURL, ch.Path, p.OwnSource)
	if pr := p.PullRequest; pr != nil {
		ch.PullRequest = &gitwb.PullRequest{Head: pr.Head, Forge: pr.Forge, Labels: pr.Labels, Reviewers: pr.Reviewers,
			Assignees: pr.Assignees, Draft: pr.Draft, AutoMerge: pr.AutoMerge}
	}
	return ch
}
