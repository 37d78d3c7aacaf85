package controller

import (
	"context"
	"errors"
	"strings"

	"github.com/crowsnest-dev/crowsnest/controller/dryrun"
	"github.com/crowsnest-dev/crowsnest/controller/imageupdate"
	"github.com/crowsnest-dev/crowsnest/watcher"
	gitwb "github.com/crowsnest-dev/crowsnest/writeback/git"
)

// planWrite computes and records what writing changes would write
// (controller/dryrun builds the report). A write that cannot be planned
// is a failure as a write would be: a Warning Event (a log line under
// --dry-run), WriteBackRefused for a file outside what app renders from.
func (r *ImageReconciler) planWrite(ctx context.Context, key string, app *watcher.App, spec *imageupdate.Spec, changes []imageupdate.Change) {
	p := dryrun.New(key, spec.WriteBack.Method, changes)
	var err error
	if p.Method == imageupdate.PlanMethodGit {
		p.Git, err = r.planGit(ctx, key, app, spec, changes)
	} else {
		planner, _ := r.Writer.(dryrun.PatchPlanner)
		p.Kubernetes, err = dryrun.Patch(ctx, planner, app, overridesOf(changes))
	}
	switch {
	case errors.Is(err, gitwb.ErrOutsideScope):
		// As the batcher reports it in a run (gitoutcomes.go reportGitResult).
		p.Error = err.Error()
		r.Metrics.update(string(spec.WriteBack.Method), "refused", 1)
		r.Log.Warn("dry run: git write-back refused", "app", key, "error", err)
		r.event(app, eventTypeWarning, EventWriteBackRefused, "dry run: "+err.Error())
	case err != nil:
		p.Error = err.Error()
		r.Log.Warn("dry run: the write-back could not be planned", "app", key, "error", err)
		r.event(app, eventTypeWarning, EventImageUpdateFailed, "dry run: "+err.Error())
	}
	dryrun.Record(r.Plans, p)
}

func (r *ImageReconciler) planGit(ctx context.Context, key string, app *watcher.App, spec *imageupdate.Spec, changes []imageupdate.Change) ([]imageupdate.GitPlan, error) {
	var planner dryrun.GitPlanner
	if r.Git != nil {
		planner, _ = r.Git.Writer.(dryrun.GitPlanner)
	}
	if planner == nil {
		return nil, dryrun.ErrNoPlanner
	}
	chs, err := r.gitWrites(ctx, key, app, spec, changes)
	if err != nil {
		return nil, err
	}
	return dryrun.Git(ctx, planner, chs)
}

// gitWrites are the Git writer's changes for app, with the credentials
// its write-back method names, the paths tenancy.writePaths lets it
// write and, for a pull request, its images' sources (describe).
func (r *ImageReconciler) gitWrites(ctx context.Context, key string, app *watcher.App, spec *imageupdate.Spec, changes []imageupdate.Change) ([]gitwb.Change, error) {
	chs, err := gitChanges(app, spec, changes)
	if err != nil {
		return nil, err
	}
	r.describe(ctx, key, spec, changes, chs)
	allowed := r.Tenancy.WritePaths(app)
	for i := range chs {
		chs[i].Key = key
		chs[i].Scope.Allowed = allowed
		if secret, ok := strings.CutPrefix(spec.WriteBack.GitCredentials, "secret:"); ok {
			chs[i].CredentialsSecret = secret
		}
	}
	return chs, nil
}
