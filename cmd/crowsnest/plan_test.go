package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/crowsnest-dev/crowsnest/controller/imageupdate"
)

func testPlan(app, to string) imageupdate.WritePlan {
	return imageupdate.WritePlan{
		App: app, Method: imageupdate.PlanMethodKubernetes,
		Changes: []imageupdate.PlannedChange{{Image: "ghcr.io/acme/web", From: "1.0.0", To: to}},
		Kubernetes: &imageupdate.PatchPlan{APIVersion: "argoproj.io/v1alpha1", Kind: "Application", Namespace: "ns", Name: strings.TrimPrefix(app, "ns/"),
			ResourceVersion: "7", PatchType: "application/json-patch+json", Patch: json.RawMessage(`[{"op":"add","path":"/x","value":"<&>"}]`)},
	}
}

// A daemon prints a plan when it appears and again only when it changes;
// --once holds them and prints them sorted at the end.
func TestPlanPrinter(t *testing.T) {
	var daemon strings.Builder
	p, err := newPlanPrinter(&daemon, planFormatJSON, false)
	if err != nil {
		t.Fatal(err)
	}
	p.RecordPlan(testPlan("ns/b", "1.1.0"))
	p.RecordPlan(testPlan("ns/b", "1.1.0"))
	p.RecordPlan(testPlan("ns/a", "1.1.0"))
	p.RecordPlan(testPlan("ns/b", "1.2.0"))
	var got []string
	for l := range strings.Lines(daemon.String()) {
		var wp imageupdate.WritePlan
		if err := json.Unmarshal([]byte(l), &wp); err != nil {
			t.Fatalf("%q: %v", l, err)
		}
		got = append(got, wp.App+" "+wp.Changes[0].To)
	}
	if diff := cmp.Diff([]string{"ns/b 1.1.0", "ns/a 1.1.0", "ns/b 1.2.0"}, got); diff != "" {
		t.Errorf("daemon printed (-want +got):\n%s", diff)
	}
	if !strings.Contains(daemon.String(), `"patch":[{"op":"add","path":"/x","value":"<&>"}]`) {
		t.Errorf("the patch is not printed as it is sent:\n%s", daemon.String())
	}

	var once strings.Builder
	p, err = newPlanPrinter(&once, planFormatText, true)
	if err != nil {
		t.Fatal(err)
	}
	p.RecordPlan(testPlan("ns/b", "1.1.0"))
	p.RecordPlan(testPlan("ns/a", "1.1.0"))
	if once.Len() != 0 {
		t.Fatalf("--once printed before the pass ended:\n%s", once.String())
	}
	if n := p.Flush(); n != 2 {
		t.Errorf("Flush = %d, want 2", n)
	}
	want := `# ns/a: kubernetes write-back
#   image ghcr.io/acme/web: 1.0.0 -> 1.1.0
#   object argoproj.io/v1alpha1 Application ns/a (resourceVersion 7)
#   patch (application/json-patch+json):
[{"op":"add","path":"/x","value":"<&>"}]

# ns/b: kubernetes write-back
`
	if !strings.HasPrefix(once.String(), want) {
		t.Errorf("text plans:\n%s\nwant them to start with:\n%s", once.String(), want)
	}

	if _, err := newPlanPrinter(&once, "yaml", false); err == nil {
		t.Error("--plan-format yaml accepted")
	}
}

// A repository whose write could not be planned says so, not that there is
// nothing to commit.
func TestPlanTextGitError(t *testing.T) {
	wp := imageupdate.WritePlan{App: "ns/web", Method: imageupdate.PlanMethodGit,
		Git:   []imageupdate.GitPlan{{Repository: "https://git.example.com/deploy.git", Branch: "main", Error: "fetching: status 500"}},
		Error: "https://git.example.com/deploy.git main: fetching: status 500"}
	got := planText(&wp)
	for _, want := range []string{"#   branch main: not planned: fetching: status 500\n", "#   error: https://git.example.com/deploy.git main: fetching: status 500\n"} {
		if !strings.Contains(got, want) {
			t.Errorf("text lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "nothing to commit") {
		t.Errorf("a failed plan reads as nothing to commit:\n%s", got)
	}
}

// A pull-request plan prints the pull request and every request it would
// send the forge, in order, then the diff.
func TestPlanTextPullRequest(t *testing.T) {
	wp := imageupdate.WritePlan{App: "ns/web", Method: imageupdate.PlanMethodGit,
		Changes: []imageupdate.PlannedChange{{Image: "ghcr.io/acme/web", From: "1.0.0", To: "1.1.0"}},
		Git: []imageupdate.GitPlan{{Repository: "https://github.com/acme/deploy.git", Branch: "crowsnest/default/main", BaseBranch: "main",
			BaseCommit: "abc", CommitMessage: "build: update web\n\nweb 1.1.0\n",
			Files: []imageupdate.PlannedFile{{Path: "web/kustomization.yaml", Diff: "--- a/web/kustomization.yaml\n"}},
			PullRequest: &imageupdate.PlannedPullRequest{Action: "open", Repository: "https://api.github.com acme/deploy",
				Head: "crowsnest/default/main", Base: "main", Title: "build: update web", Body: "web 1.1.0", Labels: []string{"deps"},
				Requests: []imageupdate.PlannedRequest{
					{Method: "POST", URL: "https://api.github.com/repos/acme/deploy/pulls", Header: map[string][]string{"Authorization": {"<redacted>"}},
						Body: `{"title":"build: update web","head":"crowsnest/default/main","base":"main"}`},
					{Method: "POST", URL: "https://api.github.com/repos/acme/deploy/issues/1/labels", Body: `["deps"]`},
				}}}}}
	got := planText(&wp)
	rest := got
	for _, want := range []string{
		"#   pull request would be opened: crowsnest/default/main into main on https://api.github.com acme/deploy\n",
		"#     title: build: update web\n", "#     | web 1.1.0\n", "#     labels: deps\n",
		"#     POST https://api.github.com/repos/acme/deploy/pulls\n", "#       Authorization: <redacted>\n",
		`#       {"title":"build: update web","head":"crowsnest/default/main","base":"main"}` + "\n",
		"#     POST https://api.github.com/repos/acme/deploy/issues/1/labels\n",
		"--- a/web/kustomization.yaml\n",
	} {
		i := strings.Index(rest, want)
		if i < 0 {
			t.Fatalf("text lacks %q (in order):\n%s", want, got)
		}
		rest = rest[i+len(want):]
	}
}
