package faults

import (
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/crowsnest-dev/crowsnest/internal/testgit"
	"github.com/crowsnest-dev/crowsnest/internal/testreg"
)

// One Application's allow-tags is a 200 KiB regexp: that image is
// refused with one Warning naming the annotation and the limit (not
// quoting the pattern), its repository is not asked for tags, and the
// other Application of the pass is updated.
func TestHostileHugeTagPattern(t *testing.T) {
	hostileTest(t)
	const marker = "HUGE-PATTERN-MARKER-51c9"
	v := newVerdict(t, "limits: a 200 KiB allow-tags regexp",
		"<alias>.allow-tags: regexp: of 200 KiB (a few bytes are usual; the limit is 1 KiB)")
	reg := testreg.StartOCI(t, testreg.OCIOptions{})
	ok := pushImage(t, reg, "team/ok", "1.0.0", "1.1.0")
	big := pushImage(t, reg, "team/big", "1.0.0", "1.1.0")
	pattern := kubeApp("ci", "pattern", map[string]string{"big": big})
	pattern.annotations["argocd-image-updater.argoproj.io/big.allow-tags"] = "regexp:^(" + marker + strings.Repeat("|a", 100<<10) + ")"
	dir := writeApps(t, pattern, kubeApp("ci", "web", map[string]string{"ok": ok}))
	p, code := runOnce(t, dir, onceOptions{})
	evs := p.events()
	warn := warnings(evs, "ci/pattern")
	asked := reg.Count("list", "/team/big")
	n, first := occurrences(p.logLines(), marker)
	cpu, rss := p.usage()
	v.answer("exit %d; %s; %d tag lists of its repository; %s CPU, %d MiB peak", code, firstMessage(warn, "allow-tags"), asked,
		cpu.Round(10e6), rss>>10)
	v.expect(code == 1, "run --once exit code %d, want 1", code)
	v.expect(slices.ContainsFunc(warn, func(e logEvent) bool {
		return strings.Contains(e.Message, "big.allow-tags") && strings.Contains(e.Message, "1024-byte limit")
	}), "no Warning on ci/pattern naming the annotation and the limit: %v", warn)
	v.expect(n == 0, "the pattern is quoted in %d log lines: %s", n, first)
	v.expect(asked == 0, "the refused image's repository was asked for tags %d times", asked)
	v.loseUnless(updated(evs, "ci/web", ok, "1.1.0"), "ci/web was not updated")
	v.credited(append(foreignEvents(evs, "ci/pattern", "allow-tags"), warnings(evs, "ci/web")...))
	v.done()
}

// A repository URL an AppProject permits is a server that answers 403
// with a 100 MiB body: crowsnest reads a bounded part of it (counted as
// what the server managed to write), says the status, and the other
// Application's commit lands.
func TestHostileHugeGitErrorAnswer(t *testing.T) {
	hostileTest(t)
	const bodySize = 100 << 20
	v := newVerdict(t, "limits: a Git server's 100 MiB error answer",
		"a permitted repository URL answers 403 with a 100 MiB body")
	var written, hits atomic.Int64
	huge := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		hits.Add(1)
		w.WriteHeader(http.StatusForbidden)
		chunk := []byte(strings.Repeat("x", 64<<10))
		for sent := 0; sent < bodySize; sent += len(chunk) {
			n, err := w.Write(chunk)
			written.Add(int64(n))
			if err != nil {
				return
			}
		}
	}))
	reg := testreg.StartOCI(t, testreg.OCIOptions{})
	web := pushImage(t, reg, "team/web", "1.0.0", "1.1.0")
	g := testgit.Start(t, testgit.Options{})
	g.CreateRepo(t, "team-a")
	g.Seed(t, "team-a", "main", map[string]string{"apps/web/kustomization.yaml": kustomization(web)}, "initial")
	dir := writeApps(t,
		gitApp("team-a", "web", g.RepoURL("team-a"), "apps/web", web, nil),
		gitApp("team-a", "huge", huge.URL+"/deploy.git", "apps/web", web, nil))
	p, code := runOnce(t, dir, onceOptions{})
	huge.Close() // waits for its handlers
	evs := p.events()
	failed := warnings(evs, "team-a/huge")
	cpu, rss := p.usage()
	v.answer("exit %d; %d requests, %d KiB of the 100 MiB written before crowsnest closed; %s; %s CPU, %d MiB peak", code, hits.Load(),
		written.Load()>>10, firstMessage(failed, "403"), cpu.Round(10e6), rss>>10)
	v.expect(hits.Load() > 0, "the server was never asked: the row tested nothing")
	v.expect(written.Load() <= int64(hits.Load())*16<<20, "%d MiB of the answers were read", written.Load()>>20)
	v.loseUnless(hasWarning(failed, "403"), "no Warning on team-a/huge naming the status 403: %v", failed)
	v.loseUnless(gitFileChanged(t, g, "team-a", "apps/web/kustomization.yaml"), "team-a/web's commit did not land")
	v.credited(foreignEvents(evs, "team-a/huge", strings.TrimPrefix(huge.URL, "http://")))
	v.done()
}
