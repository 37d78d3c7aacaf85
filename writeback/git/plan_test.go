package git

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/crowsnest-dev/crowsnest/internal/testgit"
)

// applyPlan checks out base of repo into a fresh folder with the git CLI,
// applies the plan's diffs with git apply and returns the folder.
func applyPlan(t *testing.T, s *testgit.Server, repo, base string, p Plan) string {
	t.Helper()
	work := t.TempDir()
	var diff strings.Builder
	for _, f := range p.Files {
		diff.WriteString(f.Diff)
	}
	patch := filepath.Join(t.TempDir(), "plan.diff")
	if err := os.WriteFile(patch, []byte(diff.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"clone", "--quiet", "--no-checkout", filepath.Join(s.Root, repo+".git"), work},
		{"-C", work, "checkout", "--quiet", base},
		{"-C", work, "apply", "--whitespace=nowarn", patch},
	} {
		cmd := exec.Command("git", args...)
		cmd.Env = testgit.Env(t.TempDir())
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %s: %v\n%s\ndiff:\n%s", strings.Join(args, " "), err, out, diff.String())
		}
	}
	return work
}

// A plan writes nothing (the remote's branches and heads stay), and its
// diffs, applied with git apply to its base commit, give exactly the files
// that Apply then commits; its commit message is Apply's.
func TestPlanDiffIsWhatApplyCommits(t *testing.T) {
	s, url := seeded(t, testgit.Options{})
	w := newWriter(t, nil)
	head := s.Head(t, "apps", "main")
	changes := []Change{
		kustomizeWeb(url, "1.2.0", "v3", "7.2"),
		{
			App: "chart", RepoURL: url, Branch: "main", Path: "chart", SourceType: SourceHelm,
			Target: Target{Kind: TargetHelmValues},
			Images: []Image{{Name: "ghcr.io/acme/web", NewTag: "1.1.0", HelmImageTag: "image.tag"}},
		},
		{
			App: "fresh", RepoURL: url, Branch: "main", Path: "fresh",
			Images: []Image{{Name: "ghcr.io/acme/fresh", NewTag: "0.9.0"}},
		},
	}

	plans, err := w.Plan(t.Context(), changes)
	if err != nil {
		t.Fatalf("Plan: %v", err)
	}
	if len(plans) != 1 {
		t.Fatalf("%d plans, want 1: %+v", len(plans), plans)
	}
	p := plans[0]
	if got := s.Head(t, "apps", "main"); got != head {
		t.Fatalf("Plan moved main from %s to %s", head, got)
	}
	if diff := cmp.Diff([]string{"main"}, s.Branches(t, "apps")); diff != "" {
		t.Errorf("branches after Plan (-want +got):\n%s", diff)
	}
	if p.BaseCommit != head || p.Branch != "main" || p.BaseBranch != "main" || p.NewBranch || p.Err != nil {
		t.Errorf("plan %+v, want base %s on main", p, head)
	}
	var paths []string
	for _, f := range p.Files {
		paths = append(paths, f.Path)
		if f.New != (f.Path == "fresh/.argocd-source-fresh.yaml") {
			t.Errorf("%s: New = %v", f.Path, f.New)
		}
	}
	work := applyPlan(t, s, "apps", p.BaseCommit, p)

	res := mustApply(t, w, changes...)
	if diff := cmp.Diff(res.FilesChanged, paths); diff != "" {
		t.Errorf("planned files (-committed +planned):\n%s", diff)
	}
	if diff := cmp.Diff(res.Updates, p.Updates); diff != "" {
		t.Errorf("planned updates (-committed +planned):\n%s", diff)
	}
	for _, f := range res.FilesChanged {
		committed, _ := s.ReadFile(t, "apps", "main", f)
		planned, err := os.ReadFile(filepath.Join(work, filepath.FromSlash(f)))
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(committed, string(planned)); diff != "" {
			t.Errorf("%s: the plan's diff applied (-committed +planned):\n%s", f, diff)
		}
	}
	c := s.Log(t, "apps", "main")[0]
	if diff := cmp.Diff(strings.TrimSpace(c.Subject+"\n\n"+c.Body), strings.TrimSpace(p.Message)); diff != "" {
		t.Errorf("commit message (-committed +planned):\n%s", diff)
	}
}

// A write branch template is rendered in the plan, which says the branch
// is new and does not create it; credentials in the URL stay out of the
// plan.
func TestPlanBranchTemplateAndRedaction(t *testing.T) {
	s, _ := seeded(t, testgit.Options{Username: "bot", Password: "pl4n-s3cret"})
	w := newWriter(t, nil)
	url := strings.Replace(s.RepoURL("apps"), "://", "://bot:pl4n-s3cret@", 1)
	ch := kustomizeWeb(url, "1.2.0")
	ch.Branch = "main:crowsnest/{{.AppName}}"

	plans, err := w.Plan(t.Context(), []Change{ch})
	if err != nil {
		t.Fatalf("Plan: %v", err)
	}
	p := plans[0]
	if p.Branch != "crowsnest/web" || p.BaseBranch != "main" || !p.NewBranch {
		t.Errorf("branch %q from %q (new %v), want crowsnest/web from main (new)", p.Branch, p.BaseBranch, p.NewBranch)
	}
	if diff := cmp.Diff([]string{"main"}, s.Branches(t, "apps")); diff != "" {
		t.Errorf("branches after Plan (-want +got):\n%s", diff)
	}
	if p.RepoURL != s.RepoURL("apps") {
		t.Errorf("RepoURL = %q, want %q (no credentials)", p.RepoURL, s.RepoURL("apps"))
	}
	if len(p.Files) != 1 || !strings.Contains(p.Files[0].Diff, `+        newTag: "1.2.0"`) {
		t.Errorf("files %+v, want the kustomization's newTag changed", p.Files)
	}
	if strings.Contains(p.RepoURL+p.Message+p.Files[0].Diff, "pl4n-s3cret") {
		t.Error("the password is in the plan")
	}
}

// A change that cannot be applied is reported in the plan, beside the ones
// that can.
func TestPlanReportsFailedChanges(t *testing.T) {
	_, url := seeded(t, testgit.Options{})
	w := newWriter(t, nil)
	bad := kustomizeWeb(url, "1.2.0")
	bad.App, bad.Path = "missing", "nowhere"
	plans, err := w.Plan(t.Context(), []Change{kustomizeWeb(url, "1.2.0"), bad})
	if err == nil || !strings.Contains(err.Error(), "missing") {
		t.Errorf("err = %v, want the failed change named", err)
	}
	if len(plans) != 1 || len(plans[0].Failed) != 1 || plans[0].Failed[0].App != "missing" || len(plans[0].Files) != 1 {
		t.Errorf("plans %+v, want one file and one failed change", plans)
	}
}
