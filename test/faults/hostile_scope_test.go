package faults

import (
	"strings"
	"testing"
	"time"

	"github.com/crowsnest-dev/crowsnest/internal/testgit"
	"github.com/crowsnest-dev/crowsnest/internal/testreg"
)

// team-b's annotation author aims Git write-back at team-a's folder of a
// repository both may deploy from: write-back-target
// kustomization:/team-a/prod with kustomize.image-name naming team-a's
// image (so newName would put team-b's image in team-a's deployment), and
// helmvalues:/team-a/prod/values.yaml. Both are refused with a Warning
// naming the file and the rule, team-a's files stay as they were, and
// team-a's own update in the same pass lands.
func TestHostileWriteIntoAnotherTeamsFolder(t *testing.T) {
	hostileTest(t)
	v := newVerdict(t, "write into another team's folder of a shared repository",
		"team-b/kust: write-back-target kustomization:/team-a/prod + kustomize.image-name <team-a's image>; "+
			"team-b/helm: helmvalues:/team-a/prod/values.yaml")
	reg := testreg.StartOCI(t, testreg.OCIOptions{})
	imgA := pushImage(t, reg, "team-a/web", "1.0.0", "1.1.0")
	imgB := pushImage(t, reg, "team-b/web", "1.0.0", "1.1.0")
	g := testgit.Start(t, testgit.Options{})
	g.CreateRepo(t, "deploy")
	values := "image:\n  name: " + imgA + "\n  tag: 1.0.0\n"
	victims := map[string]string{
		"team-a/prod/kustomization.yaml": kustomization(imgA),
		"team-a/prod/values.yaml":        values,
	}
	g.Seed(t, "deploy", "main", map[string]string{
		"team-a/prod/kustomization.yaml":    victims["team-a/prod/kustomization.yaml"],
		"team-a/prod/values.yaml":           values,
		"team-a/staging/kustomization.yaml": kustomization(imgA),
		"team-b/prod/kustomization.yaml":    kustomization(imgB),
	}, "initial")
	repo := g.RepoURL("deploy")
	dir := writeApps(t,
		gitApp("team-a", "web", repo, "team-a/staging", imgA, nil),
		gitApp("team-b", "kust", repo, "team-b/prod", imgB, map[string]string{
			annTarget: "kustomization:/team-a/prod", "argocd-image-updater.argoproj.io/app.kustomize.image-name": imgA}),
		gitApp("team-b", "helm", repo, "team-b/prod", imgB, map[string]string{
			annTarget: "helmvalues:/team-a/prod/values.yaml",
			"argocd-image-updater.argoproj.io/app.helm.image-name": "image.name", "argocd-image-updater.argoproj.io/app.helm.image-tag": "image.tag"}))

	start := time.Now()
	p, code := runOnce(t, dir, onceOptions{})
	v.since(start)
	evs := p.events()
	var answers []string
	for _, c := range []struct{ app, file string }{
		{"team-b/kust", "team-a/prod/kustomization.yaml"},
		{"team-b/helm", "team-a/prod/values.yaml"},
	} {
		refused := eventsOf(evs, c.app, "WriteBackRefused")
		answers = append(answers, c.app+": "+firstMessage(refused, "renders from"))
		v.expect(hasWarning(refused, c.file, "rule:", "tenancy.writePaths"), "no WriteBackRefused on %s naming %s and the rule", c.app, c.file)
		v.expect(len(eventsOf(evs, c.app, "ImagesUpdated")) == 0, "%s was reported updated", c.app)
	}
	v.answer("exit %d; %s", code, strings.Join(answers, "; "))
	v.expect(code == 1, "run --once exit code %d, want 1 (refused writes fail the pass)", code)
	var wrong []logEvent
	for f, want := range victims {
		if got, _ := g.ReadFile(t, "deploy", "main", f); got != want {
			wrong = append(wrong, logEvent{App: "team-a/web", Reason: "changed by team-b", Message: f + ":\n" + got})
		}
	}
	v.credited(wrong)
	v.loseUnless(updated(evs, "team-a/web", imgA, "1.1.0") && gitFileChanged(t, g, "deploy", "team-a/staging/kustomization.yaml"),
		"team-a/web's own update did not land")
	v.done()
}
