package faults

import (
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/crowsnest-dev/crowsnest/internal/testgit"
	"github.com/crowsnest-dev/crowsnest/internal/testreg"
)

// One team's Application names a branch Git cannot use, in the same pass
// as another team's: one whose template fails only when rendered, one the
// annotation reader can refuse ("a..b"). The other team's change is
// committed with no Warning; each bad one gets exactly its own Warning
// and nothing of it is written.
func TestHostileBadBranchInABatch(t *testing.T) {
	hostileTest(t)
	v := newVerdict(t, "wrong Application: one team's unusable git-branch in a shared batch",
		"team-a/web (plain), team-b/evil (git-branch main:upd-{{(index .Images 5).NewTag}}, fails to render) and team-c/dots (git-branch a..b), one repository, one pass")
	reg := testreg.StartOCI(t, testreg.OCIOptions{})
	imgA := pushImage(t, reg, "team-a/web", "1.0.0", "1.1.0")
	imgB := pushImage(t, reg, "team-b/evil", "1.0.0", "1.1.0")
	imgC := pushImage(t, reg, "team-c/dots", "1.0.0", "1.1.0")
	g := testgit.Start(t, testgit.Options{})
	g.CreateRepo(t, "deploy")
	files := map[string]string{"apps/a/kustomization.yaml": kustomization(imgA), "apps/b/kustomization.yaml": kustomization(imgB), "apps/c/kustomization.yaml": kustomization(imgC)}
	g.Seed(t, "deploy", "main", files, "initial")
	dir := writeApps(t,
		gitApp("team-a", "web", g.RepoURL("deploy"), "apps/a", imgA, nil),
		gitApp("team-b", "evil", g.RepoURL("deploy"), "apps/b", imgB, map[string]string{annGitBranch: "main:upd-{{(index .Images 5).NewTag}}"}),
		gitApp("team-c", "dots", g.RepoURL("deploy"), "apps/c", imgC, map[string]string{annGitBranch: "a..b"}))
	p, code := runOnce(t, dir, onceOptions{})
	evs := p.events()
	v.answer("exit %d; team-a/web: %s; team-b/evil: %s; team-c/dots: %s", code,
		firstMessage(eventsOf(evs, "team-a/web", "")), firstMessage(warnings(evs, "team-b/evil"), "rendering"), firstMessage(warnings(evs, "team-c/dots"), "a..b"))
	v.expect(code == 1, "run --once exit code %d, want 1 (team-b's write failed)", code)
	lost := 0
	for what, ok := range map[string]bool{
		"team-a's file":         gitFileChanged(t, g, "deploy", "apps/a/kustomization.yaml"),
		"team-a/web's Event":    updated(evs, "team-a/web", imgA, "1.1.0"),
		"team-b/evil's Warning": len(eventsOf(evs, "team-b/evil", "ImageUpdateFailed")) == 1 && hasWarning(evs, "evil: invalid change", "rendering branch template"),
		"team-c/dots's Warning": len(eventsOf(evs, "team-c/dots", "InvalidAnnotation")) == 1 && hasWarning(evs, `invalid branch name "a..b"`),
	} {
		if !ok {
			lost++
			t.Logf("lost: %s", what)
		}
	}
	v.lose(lost, "%d of 4 results (team-a's file and Event, the bad ones' own Warnings) missing", lost)
	v.expect(seeded(t, g, "apps/b/kustomization.yaml", imgB) && seeded(t, g, "apps/c/kustomization.yaml", imgC),
		"a bad branch's change was written")
	v.expect(slices.Equal(g.Branches(t, "deploy"), []string{"main"}), "branches %q, want main only", g.Branches(t, "deploy"))
	wrong := warnings(evs, "team-a/web")
	wrong = append(wrong, foreignEvents(evs, "team-b/evil", "evil")...)
	wrong = append(wrong, foreignEvents(evs, "team-c/dots", "a..b")...)
	v.credited(wrong)
	v.done()
}

// seeded reports whether the kustomization at path on the deploy
// repository's main is still as seeded for image.
func seeded(t *testing.T, g *testgit.Server, path, image string) bool {
	t.Helper()
	got, _ := g.ReadFile(t, "deploy", "main", path)
	return got == kustomization(image)
}

// commitRE finds the short commit an ImagesUpdated Event names.
var commitRE = regexp.MustCompile(`commit ([0-9a-f]{12})`)

// Two teams' Applications write to one repository and branch, each with
// its own token in its repoURL, and a third with none: each push is made
// with the token of the Application whose change it carries, and the one
// without credentials is refused, not pushed with another's.
func TestHostileCredentialsInURLPushOnlyTheirOwn(t *testing.T) {
	hostileTest(t)
	const tokenA, tokenB = "url-t0ken-TEAM-A-71f0", "url-t0ken-TEAM-B-2c9a"
	v := newVerdict(t, "credentials: one Application's repoURL credentials push another's change",
		"team-a/web (http://alice:<token a>@host/deploy.git), team-b/api (bob:<token b>, same repository and branch) and team-c/plain (no credentials), one pass")
	reg := testreg.StartOCI(t, testreg.OCIOptions{})
	imgA := pushImage(t, reg, "team-a/web", "1.0.0", "1.1.0")
	imgB := pushImage(t, reg, "team-b/api", "1.0.0", "1.1.0")
	imgC := pushImage(t, reg, "team-c/plain", "1.0.0", "1.1.0")
	g := testgit.Start(t, testgit.Options{Accounts: map[string]string{"alice": tokenA, "bob": tokenB}})
	g.CreateRepo(t, "deploy")
	g.Seed(t, "deploy", "main", map[string]string{"apps/a/kustomization.yaml": kustomization(imgA), "apps/b/kustomization.yaml": kustomization(imgB), "apps/c/kustomization.yaml": kustomization(imgC)}, "initial")
	as := func(user, token string) string {
		return strings.Replace(g.RepoURL("deploy"), "http://", "http://"+user+":"+token+"@", 1)
	}
	dir := writeApps(t,
		gitApp("team-a", "web", as("alice", tokenA), "apps/a", imgA, nil),
		gitApp("team-b", "api", as("bob", tokenB), "apps/b", imgB, nil),
		gitApp("team-c", "plain", g.RepoURL("deploy"), "apps/c", imgC, nil))
	p, code := runOnce(t, dir, onceOptions{})
	evs := p.events()
	pusher := map[string]string{} // short commit -> the user whose push left it at main's head
	for _, push := range g.Pushes() {
		for _, h := range push.Heads {
			if sha, ok := strings.CutPrefix(h, "main "); ok {
				pusher[sha[:12]] = push.User
			}
		}
	}
	pushedAs := func(app string) string {
		for _, e := range eventsOf(evs, app, "ImagesUpdated") {
			if m := commitRE.FindStringSubmatch(e.Message); m != nil {
				return pusher[m[1]]
			}
		}
		return ""
	}
	v.answer("exit %d; team-a/web pushed as %q, team-b/api as %q; team-c/plain: %s", code,
		pushedAs("team-a/web"), pushedAs("team-b/api"), firstMessage(warnings(evs, "team-c/plain"), "refused"))
	n, first := occurrences(p.logLines(), tokenA, tokenB)
	v.leak(n, "%d log lines: %s", n, first)
	v.expect(code == 1, "run --once exit code %d, want 1 (team-c's push was refused)", code)
	lost := 0
	for what, ok := range map[string]bool{
		"team-a/web's Event":     updated(evs, "team-a/web", imgA, "1.1.0"),
		"team-b/api's Event":     updated(evs, "team-b/api", imgB, "1.1.0"),
		"team-a's file":          gitFileChanged(t, g, "deploy", "apps/a/kustomization.yaml"),
		"team-b's file":          gitFileChanged(t, g, "deploy", "apps/b/kustomization.yaml"),
		"team-c/plain's Warning": hasWarning(warnings(evs, "team-c/plain"), "refused the credentials"),
	} {
		if !ok {
			lost++
			t.Logf("lost: %s", what)
		}
	}
	v.lose(lost, "%d of 5 results (the two pushes' Events and files, team-c's refusal) missing", lost)
	var wrong []logEvent
	for app, user := range map[string]string{"team-a/web": "alice", "team-b/api": "bob"} {
		if got := pushedAs(app); got != user {
			wrong = append(wrong, logEvent{App: app, Reason: "pushed as", Message: got})
		}
	}
	if !seeded(t, g, "apps/c/kustomization.yaml", imgC) {
		wrong = append(wrong, logEvent{App: "team-c/plain", Reason: "pushed", Message: "with another Application's credentials"})
	}
	v.credited(wrong)
	v.done()
}
