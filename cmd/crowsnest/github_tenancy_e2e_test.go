package main

import (
	"fmt"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/crowsnest-dev/crowsnest/internal/testnotify"
)

// A team's Application cannot have crowsnest post to a GitHub repository
// its AppProject does not permit: the github service acts with the
// operator's token on the repository repoURLPath renders (by default the
// Application's repoURL, or its first source). The real daemon on a real
// apiserver, AppProject team-a permitting only team-a's repositories on
// the GitHub double, tenancy.gitRepositories widening team-c's:
// Applications pointing at team-b's repository (spec.source, or the first
// of spec.sources) get a log line naming the app, service and repository
// and a count in crowsnest_notify_render_failures_total, and no request
// reaches GitHub for them; team-a's and team-c's get their commit status.
func TestE2EGitHubNotificationsStayInPermittedRepositories(t *testing.T) {
	const (
		rev   = "0123456789abcdef0123456789abcdef01234567"
		token = "e2e-gh-T0KEN"
	)
	gh := testnotify.NewRequests(t, http.StatusCreated, `{"id": 7}`)
	kubeconfig, ns, dir := e2eCluster(t, "e2e-ghtenant")
	createProject(t, ns, "team-a", []any{gh.URL + "/team-a/*"}, nil)
	cfgPath := filepath.Join(dir, "crowsnest.yaml")
	writeFile(t, cfgPath, fmt.Sprintf(`apiVersion: crowsnest.dev/v1alpha1
kind: Config
leaderElection: {leaseNamespace: %[1]s}
tenancy:
  gitRepositories: ["%[2]s/team-c/*"]
notifications:
  services:
    gh:
      github: {token: %[3]s, enterpriseBaseURL: "%[2]s/api/v3"}
  triggers:
    on-seen:
      - when: "true"
        send: [gh-status]
  templates:
    gh-status:
      message: "{{.app.metadata.name}} deployed"
      github:
        revisionPath: %[4]s
        status: {state: success, label: crowsnest}
  subscriptions:
    - recipients: [gh]
      triggers: [on-seen]
`, ns, gh.URL, token, rev))
	metricsAddr := freeAddr(t)
	d := startDaemon(t, "--kubeconfig", kubeconfig, "--config", cfgPath, "--namespace", ns, "--argocd-namespace", ns,
		"--metrics-bind-address", metricsAddr, "--health-probe-bind-address", "0", "--log-format", "json")
	d.waitLog(t, `"msg":"engine caches synced"`)

	app := func(name, source string) string {
		return fmt.Sprintf(`
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: %s}
spec:
  project: team-a
  destination: {server: https://kubernetes.default.svc, namespace: web}
  %s
`, name, source)
	}
	teamB := gh.URL + "/team-b/app.git"
	createApp(t, ns, app("hostile", "source: {repoURL: "+teamB+", path: deploy}"))
	createApp(t, ns, app("hostile-multi", "sources: [{repoURL: "+teamB+", path: deploy}, {repoURL: "+gh.URL+"/team-a/app.git, path: deploy}]"))
	for _, name := range []string{"hostile", "hostile-multi"} {
		d.waitLog(t, `"msg":"notification refused`, `"app":"`+ns+"/"+name+`"`, `"service":"gh"`, `"repository":"`+gh.URL+`/team-b/app"`, "spec.sourceRepos")
	}
	// Refused when rendered, before anything is enqueued: nothing of
	// theirs can reach GitHub later.
	waitFor(t, "two refusals counted", func() bool {
		_, body := httpGet(t.Context(), "http://"+metricsAddr+"/metrics")
		return strings.Contains(body, `crowsnest_notify_render_failures_total{reason="refused",service="gh"} 2`)
	})

	createApp(t, ns, app("own", "source: {repoURL: "+gh.URL+"/team-a/app.git, path: deploy}"))
	createApp(t, ns, app("widened", "source: {repoURL: "+gh.URL+"/team-c/app.git, path: deploy}"))
	want := []string{"POST /api/v3/repos/team-a/app/statuses/" + rev, "POST /api/v3/repos/team-c/app/statuses/" + rev}
	waitFor(t, "the permitted statuses", func() bool { return len(gh.All()) >= len(want) })
	got := gh.All()
	slices.Sort(got)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("GitHub requests (-want +got):\n%s", diff)
	}
	if _, body := httpGet(t.Context(), "http://"+metricsAddr+"/metrics"); !strings.Contains(body, `crowsnest_notify_render_failures_total{reason="refused",service="gh"} 2`) {
		t.Errorf("refusals after the permitted sends, want still 2:\n%s", grepLines(body, "crowsnest_notify_render_failures_total"))
	}
	if logs := strings.Join(d.lines(), "\n"); strings.Contains(logs, token) {
		t.Errorf("the daemon logged the GitHub token")
	}
}

// grepLines keeps the lines of s that contain sub.
func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
