package faults

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/crowsnest-dev/crowsnest/internal/testgit"
	"github.com/crowsnest-dev/crowsnest/internal/testreg"
)

// templateTimeout is how long a runaway template may run before the row
// gives up on it and kills the process: a render within its limits fails
// in well under a second, one without limits runs for minutes.
const templateTimeout = 30 * time.Second

// maxTemplateRSS bounds the peak memory of a process whose template was
// stopped by a limit (the race-enabled binary's own use included); one
// without limits builds a string of a gigabyte and more.
const maxTemplateRSS = 1 << 30

// isLimitError reports whether text says a limit, a budget or a bound
// ("out of range 0..10000") stopped the render.
func isLimitError(text string) bool {
	l := strings.ToLower(text)
	return strings.Contains(l, "budget") || strings.Contains(l, "limit") || strings.Contains(l, "out of range")
}

// Notification templates that would run for a billion iterations or build
// a gigabyte (`crowsnest notify template render`, the same rendering as
// the daemon's) fail with an error naming the limit, within bounded
// memory; a plain template of the same config still renders.
func TestHostileTemplateLimits(t *testing.T) {
	hostileTest(t)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "crowsnest.yaml")
	writeTestFile(t, cfg, `apiVersion: crowsnest.dev/v1alpha1
kind: Config
notifications:
  templates:
    runaway-range:
      message: '{{range 1000000000}}x{{end}}'
    runaway-repeat:
      message: '{{repeat 1000000000 "x"}}'
    runaway-nested-repeat:
      message: '{{repeat 10000 (repeat 10000 "x")}}'
    plain:
      message: 'app {{.app.metadata.name}} is fine'
`)
	app := filepath.Join(dir, "app.yaml")
	writeTestFile(t, app, kubeApp("ci", "web", map[string]string{"web": "registry.example/team/web"}).String())
	render := func(t *testing.T, name string) (*proc, int) {
		t.Helper()
		p := startCrowsnest(t, nil, "notify", "template", "render", name, "--config", cfg, "--app", app, "--service", "slack")
		code := p.wait(t, templateTimeout)
		return p, code
	}
	for _, tc := range []struct{ attack, tried, template string }{
		{"template limits: {{range 1000000000}}", "notification template `{{range 1000000000}}x{{end}}`", "runaway-range"},
		{"template limits: huge repeat", "notification template `{{repeat 1000000000 \"x\"}}`", "runaway-repeat"},
		{"template limits: nested repeat (100 MB)", "notification template `{{repeat 10000 (repeat 10000 \"x\")}}`", "runaway-nested-repeat"},
	} {
		t.Run(tc.template, func(t *testing.T) {
			t.Parallel()
			v := newVerdict(t, tc.attack, tc.tried+", rendered by `crowsnest notify template render`")
			p, code := render(t, tc.template)
			cpu, rss := p.usage()
			_, outBytes := p.output()
			closing := p.closing()
			v.answer("exit %d: %s (%s CPU, %d MiB peak)", code, excerpt(closing, "error calling", 200), cpu.Round(10*time.Millisecond), rss>>10)
			v.expect(!p.killed, "still rendering after %s (killed)", templateTimeout)
			v.expect(code != 0, "rendered (exit 0, %d bytes)", outBytes)
			v.expect(isLimitError(closing), "the error does not name a limit: %q", closing)
			v.expect(rss*1024 < maxTemplateRSS, "peak memory %d MiB, bound %d MiB", rss>>10, maxTemplateRSS>>20)
			plain, plainCode := render(t, "plain")
			out, _ := plain.output()
			v.loseUnless(plainCode == 0 && strings.Contains(out, "app web is fine"),
				"the plain template of the same config did not render: exit %d, %q", plainCode, shorten(out, 200))
			v.done()
		})
	}
}

// A tenant's git-branch annotation is a template too: one that would
// loop a billion times must fail that Application's write-back with an
// error naming the limit, and the other Application writing to the same
// repository must still get its commit.
func TestHostileBranchTemplateLimit(t *testing.T) {
	hostileTest(t)
	v := newVerdict(t, "template limits: tenant's git-branch template",
		"annotation git-branch: `main:crowsnest-{{range 1000000000}}{{end}}x`, beside another Application writing to the same repository")
	reg := testreg.StartOCI(t, testreg.OCIOptions{})
	web := pushImage(t, reg, "team/web", "1.0.0", "1.1.0")
	g := testgit.Start(t, testgit.Options{})
	g.CreateRepo(t, "deploy")
	g.Seed(t, "deploy", "main", map[string]string{"apps/web/kustomization.yaml": kustomization(web), "apps/api/kustomization.yaml": kustomization(web)}, "initial")
	dir := writeApps(t,
		gitApp("ci", "web", g.RepoURL("deploy"), "apps/web", web, map[string]string{annGitBranch: "main:crowsnest-{{range 1000000000}}{{end}}x"}),
		gitApp("ci", "api", g.RepoURL("deploy"), "apps/api", web, nil))
	p, code := runOnce(t, dir, onceOptions{timeout: templateTimeout})
	cpu, rss := p.usage()
	evs := p.events()
	warn := warnings(evs, "ci/web")
	v.answer("exit %d; %s (%s CPU, %d MiB peak)", code, firstMessage(warn), cpu.Round(10*time.Millisecond), rss>>10)
	v.expect(!p.killed, "the pass was still running after %s (killed): the template is not bounded", templateTimeout)
	v.expect(code == 1, "run --once exit code %d, want 1", code)
	v.expect(slices.ContainsFunc(warn, func(e logEvent) bool { return isLimitError(e.Message) }),
		"no Warning on ci/web naming a limit: %v", warn)
	v.loseUnless(gitFileChanged(t, g, "deploy", "apps/api/kustomization.yaml"), "ci/api's commit did not land")
	v.credited(warnings(evs, "ci/api"))
	v.done()
}
