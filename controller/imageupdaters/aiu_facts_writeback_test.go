package imageupdaters

import (
	"testing"

	"github.com/google/go-cmp/cmp"

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
		// AIU builds a pull-request write-back and keeps the applicationRef
		// (no continue); crowsnest cannot open the pull request, so it keeps
		// the applicationRef too (a broader one would push where a review
		// was asked for) and writes nothing: an empty method.
		{name: "gitConfig.pullRequest with git is refused (no pull requests yet): the applicationRef keeps its Applications and writes nothing",
			source: aiuNewWBC + " (PRProvider, PRLabels), " + aiuFilter + " (break)",
			docs: shopIU(`{applicationRefs: [{namePattern: shop-web, writeBackConfig: {method: git, gitConfig: {branch: main, pullRequest: {github: {}, labels: [dependencies]}}}, ` +
				`images: [` + apiImage + `]}, ` + webGlobRef + `]}`),
			images: []factImage{api}, wb: &imageupdate.WriteBack{Target: imageupdate.Target{Kind: imageupdate.TargetArgoCDSource}, Branch: "main"},
			problems: []string{at("spec.applicationRefs[0].writeBackConfig.gitConfig.pullRequest")}},
		{name: "gitConfig.pullRequest with the argocd method is ignored, as AIU ignores it", source: aiuNewWBC + " (argocd returns before reading gitConfig)",
			docs: wbIU(`{method: argocd, gitConfig: {pullRequest: {gitlab: {}}}}`, ""), images: images, wb: &argocdWB},
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
	spec, _, ok := s.Match(shopWeb())
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
