package imageupdaters

import (
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/crowsnest-dev/crowsnest/controller/imageupdate"
)

// wbIU is an ImageUpdater with writeBackConfig specWB at the spec level
// ("" for none) and one applicationRef "shop-*" listing web, with refWB
// ("" for none).
func wbIU(specWB, refWB string) []string {
	s, r := "", ""
	if specWB != "" {
		s = `writeBackConfig: ` + specWB + `, `
	}
	if refWB != "" {
		r = `writeBackConfig: ` + refWB + `, `
	}
	return shopIU(`{` + s + `applicationRefs: [{namePattern: "shop-*", ` + r + `images: [` + webImage + `]}]}`)
}

// prIU is an ImageUpdater whose applicationRef for shop-web (listing
// api) writes back as refWB, before one for "shop-*" (listing web) with
// the default write-back.
func prIU(refWB string) []string {
	return shopIU(`{applicationRefs: [{namePattern: shop-web, writeBackConfig: ` + refWB + `, images: [` + apiImage + `]}, ` + webGlobRef + `]}`)
}

// prWB is wb on branch with pull request pr.
func prWB(wb *imageupdate.WriteBack, branch string, pr *imageupdate.PullRequest) *imageupdate.WriteBack {
	out := *wb
	out.Branch, out.PullRequest = branch, pr
	return &out
}

// manyLabels is n distinct labels, YAML flow.
func manyLabels(n int) string {
	l := make([]string, n)
	for i := range l {
		l[i] = "l" + strconv.Itoa(i)
	}
	return strings.Join(l, ", ")
}

// TestAIUImageUpdaterWriteBackFacts: writeBackConfig and gitConfig at the
// spec and applicationRef levels.
func TestAIUImageUpdaterWriteBackFacts(t *testing.T) {
	gitSecret := gitWB(sourceTarget)
	gitSecret.GitCredentials = "secret:team-a/git"
	gitSecretName := gitWB(sourceTarget)
	gitSecretName.GitCredentials = "secret:team-a/git-creds"
	repocreds := gitWB(sourceTarget)
	repocreds.GitCredentials = "repocreds"
	merged := gitWB(imageupdate.Target{Kind: imageupdate.TargetHelmValues, Path: "values.yaml"})
	merged.Branch, merged.Repository = "release", "https://git.acme.io/shop.git"
	pushBranch := gitWB(sourceTarget)
	pushBranch.Branch, pushBranch.PushBranch = "main", "image-updater{{range .Images}}-{{.Name}}{{end}}"
	repository := gitWB(sourceTarget)
	repository.Repository = "https://git.acme.io/config.git"
	refused := &imageupdate.WriteBack{Target: sourceTarget, Branch: "release..1"}
	images := []factImage{web}
	runFacts(t, []factRow{
		{name: "no writeBackConfig: the argocd method", source: aiuNewWBC + " (Method: WriteBackApplication)",
			docs: wbIU("", ""), images: images, wb: &argocdWB},
		{name: "method argocd", source: aiuNewWBC,
			docs: wbIU(`{method: argocd}`, ""), images: images, wb: &argocdWB},
		{name: "method git uses the repository's Argo CD credentials", source: aiuNewWBC + " (creds := \"repocreds\")",
			docs: wbIU(`{method: git}`, ""), images: images, wb: gitWB(sourceTarget)},
		{name: "method git:repocreds", source: aiuArgocdGo + " (newWBCFromSettings), pkg/argocd/gitcreds.go (getGitCredsSource)",
			docs: wbIU(`{method: "git:repocreds"}`, ""), images: images, wb: repocreds},
		{name: "method git:secret:<namespace>/<name>", source: "pkg/argocd/gitcreds.go (getCredsFromSecret)",
			docs: wbIU(`{method: "git:secret:team-a/git"}`, ""), images: images, wb: gitSecret},
		{name: "method git:secret:<name> is a Secret in the resource's namespace", source: "docs/basics/update-methods.md (\"secret:<secret> - secret name only\"), pkg/argocd/gitcreds.go (getCredsFromSecret)",
			docs: wbIU(`{method: "git:secret:git-creds"}`, ""), images: images, wb: gitSecretName},
		{name: "a git:secret: in another namespace is refused: nothing is written", source: "pkg/argocd/gitcreds.go (\"secret namespace '%s' differs from app namespace\")",
			docs: wbIU(`{method: "git:secret:team-b/git"}`, ""), images: images,
			wb: &imageupdate.WriteBack{GitCredentials: "secret:team-b/git", Target: sourceTarget}, problems: []string{at("spec.writeBackConfig.method")}},
		{name: "an unknown method drops the applicationRef: the Application goes to the next matching one", source: aiuFilter + " (newWBCFromSettings error: continue), " + aiuNewWBC + " (\"invalid update mechanism\")",
			docs:   shopIU(`{applicationRefs: [{namePattern: shop-web, writeBackConfig: {method: svn}, images: [` + apiImage + `]}, ` + webGlobRef + `]}`),
			images: images, wb: &argocdWB, problems: []string{at("spec.applicationRefs[0].writeBackConfig.method")}},
		{name: "the applicationRef's writeBackConfig overrides the spec's field by field", source: aiuMergeWBC,
			docs: wbIU(`{method: git, gitConfig: {branch: main, writeBackTarget: "helmvalues:values.yaml", repository: "https://git.acme.io/shop.git"}}`,
				`{gitConfig: {branch: release}}`),
			images: images, wb: merged},
		{name: "the applicationRef's method overrides the spec's; the argocd method ignores writeBackTarget, visibly", source: aiuMergeWBC + ", " + aiuNewWBC + " (argocd returns before reading gitConfig)",
			docs:   wbIU(`{method: git, gitConfig: {writeBackTarget: kustomization}}`, `{method: argocd}`),
			images: images, wb: &argocdWB, problems: []string{at("spec.writeBackConfig.gitConfig.writeBackTarget")}},
		{name: "writeBackTarget kustomization:<path>", source: aiuNewWBC + " (parseKustomizeBase)",
			docs: wbIU(`{method: git, gitConfig: {writeBackTarget: "kustomization:../base"}}`, ""), images: images,
			wb: gitWB(imageupdate.Target{Kind: imageupdate.TargetKustomization, Path: "../base"})},
		{name: "writeBackTarget helmvalues:<path>", source: aiuNewWBC + " (parseTarget)",
			docs: wbIU(`{method: git, gitConfig: {writeBackTarget: "helmvalues:/env/prod/values.yaml"}}`, ""), images: images,
			wb: gitWB(imageupdate.Target{Kind: imageupdate.TargetHelmValues, Path: "/env/prod/values.yaml"})},
		{name: "a writeBackTarget naming another file is refused (deliberate: AIU writes parameter overrides there)", source: aiuNewWBC + " (wbc.Target = target)",
			docs: wbIU(`{method: git, gitConfig: {writeBackTarget: "overrides/images.yaml"}}`, ""), unselected: true,
			problems: []string{at("spec.writeBackConfig.gitConfig.writeBackTarget")}},
		{name: "a bare writeBackTarget naming a kustomization file is refused, as AIU refuses it", source: aiuNewWBC + " (\"looks like a standard kustomization file\")",
			docs: wbIU(`{method: git, gitConfig: {writeBackTarget: "base/kustomization.yaml"}}`, ""), unselected: true,
			problems: []string{at("spec.writeBackConfig.gitConfig.writeBackTarget")}},
		{name: "branch <base>:<target> checks out base and pushes to the target template", source: "docs/basics/update-methods.md (Specifying a separate base and commit branch)",
			docs: wbIU(`{method: git, gitConfig: {branch: "main:image-updater{{range .Images}}-{{.Name}}{{end}}"}}`, ""), images: images, wb: pushBranch},
		{name: "repository overrides the Application's source repository", source: aiuTypesGo + " (GitConfig.Repository)",
			docs: wbIU(`{method: git, gitConfig: {repository: "https://git.acme.io/config.git"}}`, ""), images: images,
			wb: repository},
		// Pull requests (docs/basics/update-methods.md, "Git Pull Request").
		{name: "gitConfig.pullRequest.github with git: a pull request, from an image-updater-<hash> head", source: aiuNewWBC + " (PRProvider, PRLabels), pkg/argocd/pr_service.go (PRBranchTemplate)",
			docs: prIU(`{method: git, gitConfig: {branch: main, pullRequest: {github: {}, labels: [dependencies]}}}`), images: []factImage{api},
			wb: prWB(gitWB(sourceTarget), "main", &imageupdate.PullRequest{Forge: "github", Labels: []string{"dependencies"}, ImageUpdaterHead: true})},
		{name: "gitConfig.pullRequest.gitlab: a merge request", source: aiuNewWBC + " (PRProviderGitLab)",
			docs: prIU(`{method: "git:secret:git-creds", gitConfig: {branch: main, pullRequest: {gitlab: {}}}}`), images: []factImage{api},
			wb: prWB(gitSecretName, "main", &imageupdate.PullRequest{Forge: "gitlab", ImageUpdaterHead: true})},
		{name: "pullRequest.labels are trimmed, empty ones and repeats left out", source: aiuArgocdGo + " (sanitizePRLabels)",
			docs: prIU(`{method: git, gitConfig: {pullRequest: {github: {}, labels: [" deps ", "", automated, deps]}}}`), images: []factImage{api},
			wb: prWB(gitWB(sourceTarget), "", &imageupdate.PullRequest{Forge: "github", Labels: []string{"deps", "automated"}, ImageUpdaterHead: true})},
		{name: "more labels than a pull request takes: the field is named, nothing is written", source: aiuTypesGo + " (Labels MaxItems=100)",
			docs: prIU(`{method: git, gitConfig: {pullRequest: {github: {}, labels: [` + manyLabels(101) + `]}}}`), images: []factImage{api},
			wb:       &imageupdate.WriteBack{Target: sourceTarget, PullRequest: &imageupdate.PullRequest{Forge: "github", ImageUpdaterHead: true}},
			problems: []string{at("spec.applicationRefs[0].writeBackConfig.gitConfig.pullRequest.labels")}},
		{name: "the applicationRef's pullRequest replaces the spec's whole (no labels inherited)", source: aiuMergeWBC + " (\"App-level PullRequest replaces the global entirely\")",
			docs: wbIU(`{method: git, gitConfig: {branch: main, pullRequest: {github: {}, labels: [deps]}}}`, `{gitConfig: {pullRequest: {gitlab: {}}}}`), images: images,
			wb: prWB(gitWB(sourceTarget), "main", &imageupdate.PullRequest{Forge: "gitlab", ImageUpdaterHead: true})},
		// AIU drops the applicationRef (continue), and a broader one may
		// then push where a review was asked for; crowsnest keeps it, and
		// writes nothing (deliberate, docs/conformance.md).
		{name: "pullRequest with github and gitlab: refused, the applicationRef keeps its Applications and writes nothing", source: aiuNewWBC + " (countPullRequestProviders), " + aiuFilter + " (continue)",
			docs: prIU(`{method: git, gitConfig: {pullRequest: {github: {}, gitlab: {}}}}`), images: []factImage{api}, wb: &imageupdate.WriteBack{Target: sourceTarget},
			problems: []string{at("spec.applicationRefs[0].writeBackConfig.gitConfig.pullRequest")}},
		{name: "pullRequest: {} (no provider): refused, the same", source: aiuNewWBC + " (\"pullRequest must have exactly one provider configured, got 0\")",
			docs: prIU(`{method: git, gitConfig: {pullRequest: {}}}`), images: []factImage{api}, wb: &imageupdate.WriteBack{Target: sourceTarget},
			problems: []string{at("spec.applicationRefs[0].writeBackConfig.gitConfig.pullRequest")}},
		{name: "pullRequest with a <base>:<target> branch: refused, naming the branch; the same", source: aiuNewWBC + " (\"pullRequest mode does not support colon branch format\")",
			docs: prIU(`{method: git, gitConfig: {branch: "main:image-updater-{{.SHA256}}", pullRequest: {github: {}}}}`), images: []factImage{api},
			wb:       &imageupdate.WriteBack{Target: sourceTarget, Branch: "main", PushBranch: "image-updater-{{.SHA256}}"},
			problems: []string{at("spec.applicationRefs[0].writeBackConfig.gitConfig.branch")}},
		{name: "gitConfig.pullRequest with the argocd method is ignored, as AIU ignores it, visibly", source: aiuNewWBC + " (argocd returns before reading gitConfig)",
			docs: wbIU(`{method: argocd, gitConfig: {pullRequest: {gitlab: {}}}}`, ""), images: images, wb: &argocdWB,
			problems: []string{at("spec.writeBackConfig.gitConfig.pullRequest")}},
		{name: "a branch Git cannot check out is reported when read: the images are selected, nothing is written", source: "pkg/argocd/git.go (commitChangesGit fails at checkout)",
			docs: wbIU(`{method: git, gitConfig: {branch: "release..1"}}`, ""), images: images,
			wb: refused, problems: []string{at("spec.writeBackConfig.gitConfig.branch")}},
	})
}

// (c) Two ImageUpdaters that select one Application with different
// write-backs: crowsnest writes an Application one way, so the first by
// name decides and the other's images for it are not updated, with a
// problem on that other resource (AIU would run both, each writing its
// own way).
func TestAIUSeveralImageUpdatersDifferentWriteBack(t *testing.T) {
	s := newSet(t,
		iu("b-shop", `{writeBackConfig: {method: git}, applicationRefs: [`+apiExactRef+`]}`),
		iu("a-shop", `{writeBackConfig: {method: argocd}, applicationRefs: [`+webGlobRef+`]}`))
	spec, _, ok := s.Match(t.Context(), shopWeb())
	if !ok {
		t.Fatal("not selected")
	}
	if diff := cmp.Diff([]factImage{web}, factImages(spec)); diff != "" {
		t.Errorf("images (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(argocdWB, spec.WriteBack); diff != "" {
		t.Errorf("write-back (-want +got):\n%s", diff)
	}
	w := &StatusWriter{Set: s, Apps: apps{shopWeb()}}
	obs := w.observe()
	if n := len(obs["team-a/a-shop"].problems); n != 0 {
		t.Errorf("a-shop, which decides, has %d problems: %v", n, obs["team-a/a-shop"].problems)
	}
	if len(obs["team-a/b-shop"].problems) == 0 {
		t.Error("b-shop, whose images for team-a/shop-web are not updated, reports no problem")
	}
}

// A write-back field the argocd method ignores (pullRequest,
// writeBackTarget) leaves nothing out: its problem is a warning (`crowsnest
// migrate` reads it as "read differently"); a refused one is not.
func TestIgnoredWriteBackFieldsWarn(t *testing.T) {
	tests := []struct {
		name, wb string
		want     []FieldError
	}{
		{name: "argocd method", wb: `{method: argocd, gitConfig: {pullRequest: {github: {}}}}`,
			want: []FieldError{{Resource: "team-a/shop", Path: "spec.writeBackConfig.gitConfig.pullRequest", Warning: true}}},
		{name: "two providers", wb: `{method: git, gitConfig: {pullRequest: {github: {}, gitlab: {}}}}`,
			want: []FieldError{{Resource: "team-a/shop", Path: "spec.writeBackConfig.gitConfig.pullRequest"}}},
		{name: "writeBackTarget with the argocd method", wb: `{method: argocd, gitConfig: {writeBackTarget: kustomization}}`,
			want: []FieldError{{Resource: "team-a/shop", Path: "spec.writeBackConfig.gitConfig.writeBackTarget", Warning: true}}},
		{name: "an unknown writeBackTarget", wb: `{method: git, gitConfig: {writeBackTarget: "jsonnet:x"}}`,
			want: []FieldError{{Resource: "team-a/shop", Path: "spec.writeBackConfig.gitConfig.writeBackTarget"}}},
		{name: "github", wb: `{method: git, gitConfig: {pullRequest: {github: {}}}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newSet(t, wbIU(tt.wb, "")...)
			var got []FieldError
			for _, err := range s.Problems("team-a/shop") {
				var fe *FieldError
				if errors.As(err, &fe) {
					got = append(got, *fe)
				}
			}
			if diff := cmp.Diff(tt.want, got, cmpopts.IgnoreFields(FieldError{}, "Msg"), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("problems (-want +got):\n%s", diff)
			}
		})
	}
}
