package faults

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crowsnest-dev/crowsnest/internal/testgit"
	"github.com/crowsnest-dev/crowsnest/internal/testreg"
)

// gitApp is a local-mode Application writing image back to Git.
func gitApp(ns, name, repoURL, path, image string, extra map[string]string) appFile {
	a := appFile{ns: ns, name: name, annotations: map[string]string{
		annImageList: "app=" + image + ":^1", annWriteBack: "git", annTarget: "kustomization",
	}, source: fmt.Sprintf("{repoURL: %s, path: %s, targetRevision: main}", yamlString(repoURL), yamlString(path)),
		running: []string{image + ":1.0.0"}}
	for k, val := range extra {
		if val == "" {
			delete(a.annotations, k)
		} else {
			a.annotations[k] = val
		}
	}
	return a
}

func kustomization(image string) string { return "images:\n- name: " + image + "\n  newTag: 1.0.0\n" }

// hasWarning reports whether one of evs says all of parts.
func hasWarning(evs []logEvent, parts ...string) bool {
	return slices.ContainsFunc(evs, func(e logEvent) bool { return containsAll(e.Message, parts) })
}

// An annotation author points Git write-back at an internal HTTP service,
// by the git-repository annotation or by spec.source.repoURL, which the
// Application's AppProject does not permit: the service is never
// contacted, in a run or under --dry-run, and a WriteBackRefused Event
// names the rule. A repository the project permits still gets its
// commit. And where the operator permits a URL that turns out to be an
// internal service answering with a page, the page never reaches the log
// or an Event, only its status.
func TestHostileSSRF(t *testing.T) {
	hostileTest(t)
	reg := testreg.StartOCI(t, testreg.OCIOptions{})
	web := pushImage(t, reg, "team/web", "1.0.0", "1.1.0")
	g := testgit.Start(t, testgit.Options{})
	g.CreateRepo(t, "team-a")
	g.Seed(t, "team-a", "main", map[string]string{
		"apps/permitted/kustomization.yaml": kustomization(web), "apps/ssrf/kustomization.yaml": kustomization(web),
	}, "initial")
	byAnnotation := startInternalService(t, http.StatusForbidden, "INTERNAL-ANNOTATION-MARKER-3c1d")
	byRepoURL := startInternalService(t, http.StatusForbidden, "INTERNAL-REPOURL-MARKER-8e4f")
	answering := startInternalService(t, http.StatusInternalServerError, "INTERNAL-ANSWER-MARKER-a7b2")
	permitted := g.RepoURL("team-a")
	project := `apiVersion: argoproj.io/v1alpha1
kind: AppProject
metadata: {name: team-a, namespace: team-a}
spec:
  sourceRepos: [` + yamlString(permitted) + `]
  destinations: [{server: "*", namespace: "*"}]
`
	inProject := func(a appFile) appFile { a.project = "team-a"; return a }
	dir := writeApps(t,
		inProject(gitApp("team-a", "permitted", permitted, "apps/permitted", web, nil)),
		inProject(gitApp("team-a", "ssrf-annotation", permitted, "apps/ssrf", web, map[string]string{annGitRepo: byAnnotation.URL + "/internal.git"})),
		inProject(gitApp("team-a", "ssrf-repourl", byRepoURL.URL+"/deploy.git", "apps/ssrf", web, nil)),
		// The default project permits every repository, as Argo CD's does.
		gitApp("team-a", "internal-permitted", answering.URL+"/deploy.git", "apps/web", web, nil))
	writeTestFile(t, filepath.Join(dir, "project.yaml"), project)

	start := time.Now()
	run, runCode := runOnce(t, dir, onceOptions{})
	dry, dryCode := runOnce(t, dir, onceOptions{args: []string{"--dry-run"}})
	evs := run.events()
	texts := append(run.logLines(), dry.logLines()...)
	landed := gitFileChanged(t, g, "team-a", "apps/permitted/kustomization.yaml")

	for _, tc := range []struct {
		attack, tried, app string
		svc                *internalService
	}{
		{"SSRF: git-repository annotation", "git-repository: http://127.0.0.1:<port>/internal.git (an internal service), not in the AppProject's sourceRepos; --once, then --once --dry-run",
			"team-a/ssrf-annotation", byAnnotation},
		{"SSRF: spec.source.repoURL", "spec.source.repoURL http://127.0.0.1:<port>/deploy.git (an internal service), not in the AppProject's sourceRepos; --once, then --once --dry-run",
			"team-a/ssrf-repourl", byRepoURL},
	} {
		t.Run(tc.app, func(t *testing.T) {
			v := newVerdict(t, tc.attack, tc.tried).since(start)
			refused := eventsOf(evs, tc.app, "WriteBackRefused")
			v.answer("exit %d / %d (dry run); %s", runCode, dryCode, firstMessage(refused, "not permitted"))
			v.leak(int(tc.svc.hits.Load()), "the internal service was contacted %d times", tc.svc.hits.Load())
			n, first := occurrences(texts, tc.svc.marker)
			v.leak(n, "%s", first)
			v.expect(hasWarning(refused, "spec.sourceRepos"), "no WriteBackRefused Event naming the rule: %v", warnings(evs, tc.app))
			v.expect(dry.count(`"msg":"git write-back refused"`, `"app":"`+tc.app+`"`) > 0, "--dry-run did not refuse it")
			v.expect(runCode == 1, "run --once exit code %d, want 1 (a refusal is a Warning)", runCode)
			v.loseUnless(landed, "team-a/permitted's commit to the permitted repository did not land")
			host := strings.TrimPrefix(tc.svc.URL, "http://")
			v.credited(foreignEvents(evs, tc.app, host))
			v.done()
		})
	}
	t.Run("internal-permitted", func(t *testing.T) {
		v := newVerdict(t, "SSRF: internal service's answer body",
			"a repository URL the project permits is an internal service answering 500 with a page; --once, then --once --dry-run").since(start)
		failed := warnings(evs, "team-a/internal-permitted")
		v.answer("%d requests to it (permitted); %s", answering.hits.Load(), firstMessage(failed, "500"))
		n, first := occurrences(texts, answering.marker)
		v.leak(n, "the answer's body: %s", first)
		v.expect(answering.hits.Load() > 0, "the permitted URL was never contacted: the row tested nothing")
		v.loseUnless(hasWarning(failed, "500"), "no Warning naming the status 500: %v", failed)
		v.credited(foreignEvents(evs, "team-a/internal-permitted", strings.TrimPrefix(answering.URL, "http://")))
		v.done()
	})
}

// Two teams' Applications of the same name (team-a/web and team-b/web)
// write to one repository in one pass: each gets only its own commit
// content, its own ImagesUpdated Event and its own notification.
func TestHostileSameNameApplications(t *testing.T) {
	hostileTest(t)
	v := newVerdict(t, "wrong Application: same-name Applications, one repository",
		"team-a/web and team-b/web (different images and versions) write to one repository in one pass, with notifications")
	reg := testreg.StartOCI(t, testreg.OCIOptions{})
	imgA := pushImage(t, reg, "team-a/web", "1.0.0", "1.1.0")
	imgB := pushImage(t, reg, "team-b/web", "1.0.0", "1.1.0", "1.2.0")
	g := testgit.Start(t, testgit.Options{})
	g.CreateRepo(t, "deploy")
	fileA, fileB := "apps/team-a/web/kustomization.yaml", "apps/team-b/web/kustomization.yaml"
	g.Seed(t, "deploy", "main", map[string]string{fileA: kustomization(imgA), fileB: kustomization(imgB)}, "initial")
	s := startSink(t)
	a := gitApp("team-a", "web", g.RepoURL("deploy"), "apps/team-a/web", imgA, nil)
	b := gitApp("team-b", "web", g.RepoURL("deploy"), "apps/team-b/web", imgB, nil)
	for _, x := range []appFile{a, b} {
		x.annotations["notifications.argoproj.io/subscribe.on-image-updated.hook0"] = ""
	}
	dir := writeApps(t, a, b)
	p, code := runOnce(t, dir, onceOptions{config: fmt.Sprintf("notifications:\n  catalog: true\n  services:\n    hook0:\n      webhook: {url: %s/hook0, timeout: 2s}\n", s.URL())})
	evs := p.events()
	gotA, _ := g.ReadFile(t, "deploy", "main", fileA)
	gotB, _ := g.ReadFile(t, "deploy", "main", fileB)
	wantA, wantB := strings.Replace(kustomization(imgA), "1.0.0", "1.1.0", 1), strings.Replace(kustomization(imgB), "1.0.0", "1.2.0", 1)
	keyA := "image-updated " + updateKey("team-a/web", imgA, "1.1.0")
	keyB := "image-updated " + updateKey("team-b/web", imgB, "1.2.0")
	got := s.counts()
	v.answer("exit %d; team-a/web: %s; team-b/web: %s; notifications: %d", code,
		firstMessage(eventsOf(evs, "team-a/web", "ImagesUpdated")), firstMessage(eventsOf(evs, "team-b/web", "ImagesUpdated")), len(got))
	v.expect(code == 0, "run --once exit code %d, want 0", code)
	lost := 0
	for what, ok := range map[string]bool{
		"team-a's file":             gotA == wantA,
		"team-b's file":             gotB == wantB,
		"team-a/web's Event":        updated(evs, "team-a/web", imgA, "1.1.0"),
		"team-b/web's Event":        updated(evs, "team-b/web", imgB, "1.2.0"),
		"team-a/web's notification": got[keyA] > 0,
		"team-b/web's notification": got[keyB] > 0,
	} {
		if !ok {
			lost++
			t.Logf("lost: %s", what)
		}
	}
	v.lose(lost, "%d of 6 results (files, Events, notifications) missing: files %q %q, notifications %v", lost, gotA, gotB, got)
	wrong := foreignEvents(evs, "team-a/web", imgA+":")
	wrong = append(wrong, foreignEvents(evs, "team-b/web", imgB+":")...)
	for _, app := range []string{"team-a/web", "team-b/web"} {
		if n := len(eventsOf(evs, app, "ImagesUpdated")); n > 1 {
			wrong = append(wrong, eventsOf(evs, app, "ImagesUpdated")...)
		}
	}
	for k, n := range got {
		if k != keyA && k != keyB {
			wrong = append(wrong, logEvent{App: "notification", Message: fmt.Sprintf("%s x%d", k, n)})
		}
	}
	v.credited(wrong)
	v.done()
}

// Credentials in a repository URL (https://user:token@host/...), one
// token per Application, and a push the server refuses: each Application
// gets a Warning and is retried, --once exits non-zero, no token shows in
// the log; the next pass, with the server accepting, lands each
// Application's own change.
func TestHostileCredentialsInURLFailedPush(t *testing.T) {
	hostileTest(t)
	const token, otherToken = "url-t0ken-HOSTILE-4b8c", "url-t0ken-OTHER-9d1e"
	v := newVerdict(t, "wrong Application: credentials in the repository URL, failed push",
		"ci/with-token (repoURL http://bot:<token>@host/deploy.git) and ci/other-token (same repository, robot:<its own token>); every push refused (500), then a pass with pushes accepted")
	reg := testreg.StartOCI(t, testreg.OCIOptions{})
	imgA := pushImage(t, reg, "team/a", "1.0.0", "1.1.0")
	imgB := pushImage(t, reg, "team/b", "1.0.0", "1.1.0")
	g := testgit.Start(t, testgit.Options{Username: "bot", Password: token, Accounts: map[string]string{"robot": otherToken}})
	g.CreateRepo(t, "deploy")
	g.Seed(t, "deploy", "main", map[string]string{"apps/a/kustomization.yaml": kustomization(imgA), "apps/b/kustomization.yaml": kustomization(imgB)}, "initial")
	withToken := strings.Replace(g.RepoURL("deploy"), "http://", "http://bot:"+token+"@", 1)
	withOther := strings.Replace(g.RepoURL("deploy"), "http://", "http://robot:"+otherToken+"@", 1)
	dir := writeApps(t, gitApp("ci", "with-token", withToken, "apps/a", imgA, nil), gitApp("ci", "other-token", withOther, "apps/b", imgB, nil))

	g.RejectPushes(1 << 20)
	failing, failCode := runOnce(t, dir, onceOptions{})
	pushes := g.Count(testgit.KindReceivePack)
	g.RejectPushes(0)
	passing, passCode := runOnce(t, dir, onceOptions{})
	failEvs, passEvs := failing.events(), passing.events()

	v.answer("refused pass: exit %d, %d push attempts, %s; next pass: exit %d", failCode, pushes,
		firstMessage(warnings(failEvs, "ci/with-token")), passCode)
	n, first := occurrences(append(failing.logLines(), passing.logLines()...), token, otherToken)
	v.leak(n, "%d log lines: %s", n, first)
	v.expect(failCode == 1, "the refused pass exited %d, want 1", failCode)
	v.expect(pushes >= 2, "%d push attempts: the writer did not retry", pushes)
	v.expect(passCode == 0, "the next pass exited %d, want 0", passCode)
	lost := 0
	for _, app := range []string{"ci/with-token", "ci/other-token"} {
		if len(eventsOf(failEvs, app, "ImageUpdateFailed")) == 0 {
			lost++
			t.Logf("lost: no ImageUpdateFailed Event on %s in the refused pass", app)
		}
		if failing.count(`"msg":"git write-back failed; will retry"`, `"app":"`+app+`"`) == 0 {
			lost++
			t.Logf("lost: no retry of %s in the refused pass", app)
		}
	}
	for app, img := range map[string]string{"ci/with-token": imgA, "ci/other-token": imgB} {
		if !updated(passEvs, app, img, "1.1.0") {
			lost++
			t.Logf("lost: %s not updated in the next pass", app)
		}
	}
	for file, img := range map[string]string{"apps/a/kustomization.yaml": imgA, "apps/b/kustomization.yaml": imgB} {
		if got, _ := g.ReadFile(t, "deploy", "main", file); got != strings.Replace(kustomization(img), "1.0.0", "1.1.0", 1) {
			lost++
			t.Logf("lost: %s is %q", file, got)
		}
	}
	v.lose(lost, "%d of 8 results (Warnings, retries, Events and files) missing", lost)
	v.credited(append(foreignEvents(passEvs, "ci/with-token", imgA+":"), foreignEvents(passEvs, "ci/other-token", imgB+":")...))
	v.done()
}

// Write-back targets that lead out of the checkout: "../" in the target
// and in the source path, absolute paths, and symbolic links committed to
// the repository that point outside it. Each is refused with a Warning on
// its Application, nothing changes in the folder they point at, and the
// Application writing where it should gets its commit.
func TestHostilePathEscapes(t *testing.T) {
	hostileTest(t)
	reg := testreg.StartOCI(t, testreg.OCIOptions{})
	img := pushImage(t, reg, "team/web", "1.0.0", "1.1.0")
	outside := t.TempDir()
	values := "image:\n  name: " + img + "\n  tag: 1.0.0\n"
	writeTestFile(t, filepath.Join(outside, "kustomization.yaml"), kustomization(img))
	writeTestFile(t, filepath.Join(outside, "values.yaml"), values)
	before := snapshotTree(t, outside)

	g := testgit.Start(t, testgit.Options{})
	g.CreateRepo(t, "deploy")
	g.Seed(t, "deploy", "main", map[string]string{"apps/web/kustomization.yaml": kustomization(img), "apps/web/values.yaml": values}, "initial")
	seedSymlink(t, g, "deploy", "apps/linked/values.yaml", filepath.Join(outside, "values.yaml"))
	seedSymlink(t, g, "deploy", "apps/out", outside)
	up := strings.Repeat("../", 30) + strings.TrimPrefix(outside, "/")
	repo := g.RepoURL("deploy")
	helm := map[string]string{annTarget: "helmvalues:values.yaml"}
	dir := writeApps(t,
		gitApp("ci", "web", repo, "apps/web", img, nil),
		gitApp("ci", "dots-target", repo, "apps/web", img, map[string]string{annTarget: "kustomization:" + up}),
		gitApp("ci", "dots-path", repo, up, img, map[string]string{annTarget: ""}),
		gitApp("ci", "absolute-path", repo, outside, img, nil),
		gitApp("ci", "absolute-target", repo, "apps/web", img, map[string]string{annTarget: "helmvalues:/../../../../../../../../.." + outside + "/values.yaml"}),
		gitApp("ci", "link-file", repo, "apps/linked", img, helm),
		gitApp("ci", "link-dir", repo, "apps/out", img, helm))

	start := time.Now()
	p, code := runOnce(t, dir, onceOptions{})
	evs := p.events()
	after := snapshotTree(t, outside)
	changedOutside := 0
	for f, content := range after {
		if before[f] != content {
			changedOutside++
		}
	}
	for f := range before {
		if _, ok := after[f]; !ok {
			changedOutside++
		}
	}
	landed := gitFileChanged(t, g, "deploy", "apps/web/kustomization.yaml")
	for _, tc := range []struct {
		attack, tried string
		apps          []string
	}{
		{"path escape: ../", "write-back-target kustomization:../../…/<outside>; spec.source.path ../../…/<outside> (argocd-source file)",
			[]string{"ci/dots-target", "ci/dots-path"}},
		{"path escape: absolute paths", "spec.source.path /<outside> (kustomization); write-back-target helmvalues:/../../…/<outside>/values.yaml",
			[]string{"ci/absolute-path", "ci/absolute-target"}},
		{"path escape: symbolic links", "committed links apps/linked/values.yaml -> <outside>/values.yaml (helmvalues) and apps/out -> <outside> (a folder)",
			[]string{"ci/link-file", "ci/link-dir"}},
	} {
		t.Run(tc.attack, func(t *testing.T) {
			v := newVerdict(t, tc.attack, tc.tried).since(start)
			var answers []string
			for _, app := range tc.apps {
				w := warnings(evs, app)
				answers = append(answers, app+": "+firstMessage(w, " is outside", " leaves", " is a symbolic link"))
				v.expect(len(w) > 0, "no Warning on %s", app)
				v.expect(len(eventsOf(evs, app, "ImagesUpdated")) == 0, "%s was reported updated", app)
			}
			v.answer("exit %d; %s", code, strings.Join(answers, "; "))
			v.expect(code == 1, "run --once exit code %d, want 1", code)
			v.leak(changedOutside, "%d files outside the checkout changed", changedOutside)
			v.loseUnless(landed, "ci/web's commit did not land")
			v.credited(warnings(evs, "ci/web"))
			v.done()
		})
	}
	if _, err := os.Stat(filepath.Join(outside, ".argocd-source-dots-path.yaml")); err == nil {
		t.Error("an argocd-source file was written outside the checkout")
	}
}

// internalService stands for a service inside the cluster's network that
// an annotation must not make crowsnest contact: it counts requests and
// answers each with status and a body carrying marker.
type internalService struct {
	URL    string
	hits   atomic.Int64
	marker string
}

func startInternalService(t *testing.T, status int, marker string) *internalService {
	t.Helper()
	s := &internalService{marker: marker}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		s.hits.Add(1)
		w.Header().Set("Content-Type", "text/html")
		w.WriteHeader(status)
		_, _ = fmt.Fprintf(w, "<html>internal service, not for tenants: %s</html>", marker)
	}))
	t.Cleanup(srv.Close)
	s.URL = srv.URL
	return s
}

// gitFileChanged reports whether a commit not made by the test's seeding
// touched path on main.
func gitFileChanged(t *testing.T, g *testgit.Server, repo, path string) bool {
	t.Helper()
	for _, c := range g.Log(t, repo, "main") {
		if c.Author == testgit.SeedAuthor+" <"+testgit.SeedEmail+">" { // Log's "name <email>"
			continue
		}
		if slices.Contains(g.ChangedFiles(t, repo, c.SHA), path) {
			return true
		}
	}
	return false
}

// seedSymlink commits a symbolic link at path (pointing at target) on
// main, as a repository's owner could.
func seedSymlink(t *testing.T, g *testgit.Server, repo, path, target string) {
	t.Helper()
	gitDir := filepath.Join(g.Root, repo+".git")
	work := t.TempDir()
	run := func(env []string, args ...string) string {
		t.Helper()
		cmd := exec.Command("git", append([]string{"--git-dir=" + gitDir}, args...)...)
		cmd.Env = append(testgit.Env(work), env...)
		out, err := cmd.Output()
		if err != nil {
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				t.Fatalf("git %s: %v: %s", strings.Join(args, " "), err, ee.Stderr)
			}
			t.Fatalf("git %s: %v", strings.Join(args, " "), err)
		}
		return strings.TrimSpace(string(out))
	}
	linkFile := filepath.Join(work, "target")
	if err := os.WriteFile(linkFile, []byte(target), 0o600); err != nil {
		t.Fatal(err)
	}
	blob := run(nil, "hash-object", "-w", linkFile)
	index := []string{"GIT_INDEX_FILE=" + filepath.Join(work, "index")}
	parent := run(nil, "rev-parse", "refs/heads/main")
	run(index, "read-tree", parent)
	run(index, "update-index", "--add", "--cacheinfo", "120000,"+blob+","+path)
	tree := run(index, "write-tree")
	sha := run(nil, "commit-tree", tree, "-p", parent, "-m", "link "+path)
	run(nil, "update-ref", "refs/heads/main", sha, parent)
}

// snapshotTree lists every file under dir with its content (a link as its
// target), skipping the folders skip names.
func snapshotTree(t *testing.T, dir string, skip ...string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if slices.Contains(skip, p) {
				return filepath.SkipDir
			}
			return nil
		}
		if d.Type()&os.ModeSymlink != 0 {
			target, err := os.Readlink(p)
			out[p] = "-> " + target
			return err
		}
		b, err := os.ReadFile(p)
		out[p] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
