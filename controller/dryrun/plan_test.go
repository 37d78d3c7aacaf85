package dryrun_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/crowsnest-dev/crowsnest/controller/dryrun"
	"github.com/crowsnest-dev/crowsnest/controller/imageupdate"
	"github.com/crowsnest-dev/crowsnest/watcher"
	gitwb "github.com/crowsnest-dev/crowsnest/writeback/git"
	"github.com/crowsnest-dev/crowsnest/writeback/kube"
)

// gitPlanner answers Plan with its plans and error.
type gitPlanner struct {
	plans []gitwb.Plan
	err   error
}

func (g gitPlanner) Plan(context.Context, []gitwb.Change) ([]gitwb.Plan, error) {
	return g.plans, g.err
}

// patchPlanner answers PlanFrom with its patch.
type patchPlanner struct{ patch kube.Patch }

func (p patchPlanner) PlanFrom(context.Context, string, string, *unstructured.Unstructured, []kube.Override) (kube.Patch, error) {
	return p.patch, nil
}

// recorded keeps the plans handed to it.
type recorded []imageupdate.WritePlan

func (r *recorded) RecordPlan(p imageupdate.WritePlan) { *r = append(*r, p) }

// The report shows what the writers would write with no credential in
// it, and a writer that cannot plan is ErrNoPlanner.
func TestPlans(t *testing.T) {
	refused := errors.New("push to https://bot:s3cret@git.example.com/apps.git refused")
	git, err := dryrun.Git(t.Context(), gitPlanner{plans: []gitwb.Plan{{
		RepoURL: "https://bot:s3cret@git.example.com/apps.git", Branch: "main", BaseBranch: "main", BaseCommit: "abc",
		Message: "bump", Files: []gitwb.FileDiff{{Path: "web/kustomization.yaml", Diff: "-1.0\n+1.1\n"}}, Err: refused,
	}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []imageupdate.GitPlan{{
		Repository: "https://***@git.example.com/apps.git", Branch: "main", BaseBranch: "main", BaseCommit: "abc", CommitMessage: "bump",
		Files: []imageupdate.PlannedFile{{Path: "web/kustomization.yaml", Diff: "-1.0\n+1.1\n"}},
		Error: "push to https://***@git.example.com/apps.git refused",
	}}
	if diff := cmp.Diff(want, git); diff != "" {
		t.Errorf("Git plan (-want +got):\n%s", diff)
	}

	app := &watcher.App{Namespace: "shop", Name: "web"}
	patch, err := dryrun.Patch(t.Context(), patchPlanner{kube.Patch{Namespace: "shop", Name: "web", ResourceVersion: "7",
		Type: types.JSONPatchType, Data: []byte(`[{"op":"test"}]`)}}, app, nil)
	if err != nil {
		t.Fatal(err)
	}
	wantPatch := &imageupdate.PatchPlan{APIVersion: "argoproj.io/v1alpha1", Kind: "Application", Namespace: "shop", Name: "web",
		ResourceVersion: "7", PatchType: string(types.JSONPatchType), Patch: json.RawMessage(`[{"op":"test"}]`)}
	if diff := cmp.Diff(wantPatch, patch); diff != "" {
		t.Errorf("patch plan (-want +got):\n%s", diff)
	}
	if _, err := dryrun.Patch(t.Context(), nil, app, nil); !errors.Is(err, dryrun.ErrNoPlanner) {
		t.Errorf("Patch without a planner: %v, want ErrNoPlanner", err)
	}
	if _, err := dryrun.Git(t.Context(), nil, nil); !errors.Is(err, dryrun.ErrNoPlanner) {
		t.Errorf("Git without a planner: %v, want ErrNoPlanner", err)
	}

	var got recorded
	p := dryrun.New("shop/web", imageupdate.MethodGit, []imageupdate.Change{{Image: "team/web", From: "1.0", To: "1.1"}})
	p.Error = refused.Error()
	dryrun.Record(&got, p)
	dryrun.Record(nil, p) // no recorder: nothing to do
	wantPlans := recorded{{App: "shop/web", Method: imageupdate.PlanMethodGit,
		Changes: []imageupdate.PlannedChange{{Image: "team/web", From: "1.0", To: "1.1"}},
		Error:   "push to https://***@git.example.com/apps.git refused"}}
	if diff := cmp.Diff(wantPlans, got); diff != "" {
		t.Errorf("recorded plans (-want +got):\n%s", diff)
	}
}
