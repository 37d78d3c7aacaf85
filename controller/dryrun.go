package controller

import (
	"context"
	"encoding/json"
	"errors"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/crowsnest-dev/crowsnest/controller/imageupdate"
	"github.com/crowsnest-dev/crowsnest/internal/redact"
	"github.com/crowsnest-dev/crowsnest/watcher"
	gitwb "github.com/crowsnest-dev/crowsnest/writeback/git"
	"github.com/crowsnest-dev/crowsnest/writeback/kube"
)

// PlanRecorder receives the plans of a dry run.
type PlanRecorder interface {
	RecordPlan(imageupdate.WritePlan)
}

// GitPlanner computes Git write-backs without writing (gitwb.Writer); the
// dry run asks the Git batcher's Writer for it.
type GitPlanner interface {
	Plan(ctx context.Context, changes []gitwb.Change) ([]gitwb.Plan, error)
}

// PatchPlanner computes Kubernetes-mode write-backs without writing
// (kube.Writer); the dry run asks the reconciler's Writer for it.
type PatchPlanner interface {
	PlanFrom(ctx context.Context, namespace, name string, cached *unstructured.Unstructured, overrides []kube.Override) (kube.Patch, error)
}

var (
	_ GitPlanner   = (*gitwb.Writer)(nil)
	_ PatchPlanner = (*kube.Writer)(nil)
)

// errNoPlanner: the writer wired cannot say what it would write.
var errNoPlanner = errors.New("this write-back cannot be planned here: its writer is not wired")

// newPlan is the plan of changes with nothing computed yet.
func newPlan(key string, spec *imageupdate.Spec, changes []imageupdate.Change) imageupdate.WritePlan {
	p := imageupdate.WritePlan{App: key, Method: imageupdate.PlanMethodKubernetes, Changes: make([]imageupdate.PlannedChange, 0, len(changes))}
	if spec.WriteBack.Method == imageupdate.MethodGit {
		p.Method = imageupdate.PlanMethodGit
	}
	for i := range changes {
		p.Changes = append(p.Changes, imageupdate.PlannedChange{Image: changes[i].Image, From: changes[i].From, To: changes[i].To})
	}
	return p
}

// recordPlan hands p to r.Plans, with its error redacted.
func (r *ImageReconciler) recordPlan(p imageupdate.WritePlan) {
	p.Error = redact.String(p.Error)
	if r.Plans != nil {
		r.Plans.RecordPlan(p)
	}
}

// planWrite computes and records what writing changes would write. A
// write that cannot be planned is a failure as a write would be: a
// Warning Event (a log line under --dry-run).
func (r *ImageReconciler) planWrite(ctx context.Context, key string, app *watcher.App, spec *imageupdate.Spec, changes []imageupdate.Change) {
	p := newPlan(key, spec, changes)
	var err error
	if p.Method == imageupdate.PlanMethodGit {
		p.Git, err = r.planGit(ctx, key, app, spec, changes)
	} else {
		p.Kubernetes, err = r.planPatch(ctx, app, changes)
	}
	if err != nil {
		p.Error = err.Error()
		r.Log.Warn("dry run: the write-back could not be planned", "app", key, "error", err)
		r.event(app, eventTypeWarning, EventImageUpdateFailed, "dry run: "+err.Error())
	}
	r.recordPlan(p)
}

func (r *ImageReconciler) planGit(ctx context.Context, key string, app *watcher.App, spec *imageupdate.Spec, changes []imageupdate.Change) ([]imageupdate.GitPlan, error) {
	var planner GitPlanner
	if r.Git != nil {
		planner, _ = r.Git.Writer.(GitPlanner)
	}
	if planner == nil {
		return nil, errNoPlanner
	}
	chs, err := r.gitWrites(key, app, spec, changes)
	if err != nil {
		return nil, err
	}
	plans, err := planner.Plan(ctx, chs)
	out := make([]imageupdate.GitPlan, 0, len(plans))
	for i := range plans {
		p := &plans[i]
		g := imageupdate.GitPlan{
			Repository: redact.URL(p.RepoURL), Branch: p.Branch, BaseBranch: p.BaseBranch, NewBranch: p.NewBranch,
			BaseCommit: p.BaseCommit, CommitMessage: p.Message, Files: make([]imageupdate.PlannedFile, 0, len(p.Files)),
		}
		for _, f := range p.Files {
			g.Files = append(g.Files, imageupdate.PlannedFile{Path: f.Path, New: f.New, Diff: f.Diff})
		}
		if p.Err != nil {
			g.Error = redact.String(p.Err.Error())
		}
		out = append(out, g)
	}
	return out, err
}

func (r *ImageReconciler) planPatch(ctx context.Context, app *watcher.App, changes []imageupdate.Change) (*imageupdate.PatchPlan, error) {
	planner, _ := r.Writer.(PatchPlanner)
	if planner == nil {
		return nil, errNoPlanner
	}
	p, err := planner.PlanFrom(ctx, app.Namespace, app.Name, app.Object, overridesOf(changes))
	if err != nil {
		return nil, err
	}
	res := watcher.ApplicationsResource
	plan := &imageupdate.PatchPlan{
		APIVersion: res.GroupVersion().String(), Kind: "Application", Namespace: p.Namespace, Name: p.Name,
		ResourceVersion: p.ResourceVersion, PatchType: string(p.Type), Patch: json.RawMessage("null"),
	}
	if p.Data != nil {
		plan.Patch = json.RawMessage(p.Data)
	}
	return plan, nil
}

// gitWrites are the Git writer's changes for app, with the credentials
// its write-back method names.
func (r *ImageReconciler) gitWrites(key string, app *watcher.App, spec *imageupdate.Spec, changes []imageupdate.Change) ([]gitwb.Change, error) {
	chs, err := gitChanges(app, spec, changes)
	if err != nil {
		return nil, err
	}
	for i := range chs {
		chs[i].Key = key
		if secret, ok := strings.CutPrefix(spec.WriteBack.GitCredentials, "secret:"); ok {
			chs[i].CredentialsSecret = secret
		}
	}
	return chs, nil
}
