package dryrun

import (
	"context"
	"encoding/json"
	"errors"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/crowsnest-dev/crowsnest/controller/imageupdate"
	"github.com/crowsnest-dev/crowsnest/internal/redact"
	"github.com/crowsnest-dev/crowsnest/watcher"
	gitwb "github.com/crowsnest-dev/crowsnest/writeback/git"
	"github.com/crowsnest-dev/crowsnest/writeback/kube"
)

// Recorder receives the plans of a dry run.
type Recorder interface {
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

// ErrNoPlanner says that the writer wired cannot say what it would write.
var ErrNoPlanner = errors.New("this write-back cannot be planned here: its writer is not wired")

// New is the plan of changes, by method, with nothing computed yet.
func New(key string, method imageupdate.Method, changes []imageupdate.Change) imageupdate.WritePlan {
	p := imageupdate.WritePlan{App: key, Method: imageupdate.PlanMethodKubernetes, Changes: make([]imageupdate.PlannedChange, 0, len(changes))}
	if method == imageupdate.MethodGit {
		p.Method = imageupdate.PlanMethodGit
	}
	for i := range changes {
		p.Changes = append(p.Changes, imageupdate.PlannedChange{Image: changes[i].Image, From: changes[i].From, To: changes[i].To})
	}
	return p
}

// Record hands p to rec, when there is one, with its error redacted.
func Record(rec Recorder, p imageupdate.WritePlan) {
	p.Error = redact.String(p.Error)
	if rec != nil {
		rec.RecordPlan(p)
	}
}

// Git asks planner what writing chs would write, per repository and
// branch, with credentials redacted. A nil planner is ErrNoPlanner.
func Git(ctx context.Context, planner GitPlanner, chs []gitwb.Change) ([]imageupdate.GitPlan, error) {
	if planner == nil {
		return nil, ErrNoPlanner
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
		if pr := p.PullRequest; pr != nil {
			g.PullRequest = &imageupdate.PlannedPullRequest{Action: pr.Action, Number: pr.Number, URL: pr.URL, Repository: pr.Repo,
				Head: pr.Head, Base: pr.Base, Title: pr.Title, Body: pr.Body, Labels: pr.Labels, Reviewers: pr.Reviewers,
				Assignees: pr.Assignees, Draft: pr.Draft, AutoMerge: pr.AutoMerge, Note: redact.String(pr.Note)}
			for _, r := range pr.Requests {
				g.PullRequest.Requests = append(g.PullRequest.Requests, imageupdate.PlannedRequest{Method: r.Method,
					URL: redact.URL(r.URL), Header: r.Header, Body: redact.String(r.Body)})
			}
		}
		if p.Err != nil {
			g.Error = redact.String(p.Err.Error())
		}
		out = append(out, g)
	}
	return out, err
}

// Patch asks planner for the patch writing overrides into app would
// send. A nil planner is ErrNoPlanner.
func Patch(ctx context.Context, planner PatchPlanner, app *watcher.App, overrides []kube.Override) (*imageupdate.PatchPlan, error) {
	if planner == nil {
		return nil, ErrNoPlanner
	}
	p, err := planner.PlanFrom(ctx, app.Namespace, app.Name, app.Decoded(), overrides)
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
