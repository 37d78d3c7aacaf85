package pipeline_test

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/crowsnest-dev/crowsnest/config"
	"github.com/crowsnest-dev/crowsnest/internal/testnotify"
	"github.com/crowsnest-dev/crowsnest/internal/testwait"
	"github.com/crowsnest-dev/crowsnest/notify"
	"github.com/crowsnest-dev/crowsnest/notify/outbox"
	"github.com/crowsnest-dev/crowsnest/notify/pipeline"
	"github.com/crowsnest-dev/crowsnest/notify/services"
	"github.com/crowsnest-dev/crowsnest/triggers"
	"github.com/crowsnest-dev/crowsnest/watcher"
)

// buildServices builds the senders of a config's services of package
// services, for Notifier.Services.
func buildServices(nc *config.Notifications) (map[string]notify.Service, error) {
	out := map[string]notify.Service{}
	for name, s := range nc.Services {
		k, ok := services.Lookup(s.Type())
		if !ok || s.Ext == nil {
			return nil, fmt.Errorf("service %s: not one of package services", name)
		}
		svc, err := k.New(name, s.Ext.Settings, services.Options{})
		if err != nil {
			return nil, err
		}
		out[name] = svc
	}
	return out, nil
}

// githubTenantApp is an Application of project team-a subscribed to
// trigger with service github; sources are its spec.source, or its
// spec.sources when more than one.
func githubTenantApp(t *testing.T, name, trigger string, annotations map[string]any, sources ...string) *watcher.App {
	t.Helper()
	spec := map[string]any{"project": "team-a", "destination": map[string]any{"server": "https://kubernetes.default.svc", "namespace": name}}
	if len(sources) == 1 {
		spec["source"] = map[string]any{"repoURL": sources[0], "path": ".", "targetRevision": "main"}
	} else {
		var list []any
		for _, s := range sources {
			list = append(list, map[string]any{"repoURL": s, "path": ".", "targetRevision": "main"})
		}
		spec["sources"] = list
	}
	ann := map[string]any{triggers.SubscribePrefix + trigger + ".github": ""}
	for k, v := range annotations {
		ann[k] = v
	}
	a, err := watcher.AppFromObject(&unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "argoproj.io/v1alpha1", "kind": "Application",
		"metadata": map[string]any{"name": name, "namespace": "team-a", "uid": "uid-" + name, "annotations": ann},
		"spec":     spec,
		"status":   map[string]any{"sync": map[string]any{"status": "Synced", "revision": "abc123"}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// A github message goes out only when its repository is one the
// Application may use (Notifier.CheckRepo, here: team-a's repositories
// on the GitHub the service posts to). The repository is the one the
// sender would act on: repoURLPath's owner/repo on the service's host,
// whatever repoURLPath renders (the Application's repoURL, its first
// source, an annotation, another host). A refused message is never
// enqueued and is counted; a template that fails to render is counted
// apart.
func TestNotifierRefusesGitHubRepositoriesTheApplicationMayNotUse(t *testing.T) {
	gh := testnotify.NewRequests(t, http.StatusCreated, `{"id": 1}`)
	nc, err := config.ParseArgoCDConfigMap(map[string]string{
		"service.github":      "token: $gh-token\nenterpriseBaseURL: " + gh.URL + "/api/v3\n",
		"trigger.on-new":      "- when: 'true'\n  send: [gh-default]\n",
		"trigger.on-path":     "- when: 'true'\n  send: [gh-path]\n",
		"trigger.on-bad":      "- when: 'true'\n  send: [gh-bad]\n",
		"template.gh-default": "message: deployed\ngithub:\n  revisionPath: abc123\n  status:\n    state: success\n",
		"template.gh-path": "message: deployed\ngithub:\n  repoURLPath: '{{index .app.metadata.annotations \"example.com/repo\"}}'\n" +
			"  revisionPath: abc123\n  status:\n    state: success\n",
		"template.gh-bad": "message: '{{call .app.metadata.name}}'\ngithub:\n  revisionPath: abc123\n  status:\n    state: success\n",
	}, map[string][]byte{"gh-token": []byte("ghp_test")})
	if err != nil {
		t.Fatal(err)
	}
	cfg := config.Default()
	cfg.Notifications = *nc

	var (
		mu      sync.Mutex
		checked []string
	)
	allowed := gh.URL + "/team-a/"
	metrics := pipeline.NewMetrics(prometheus.NewRegistry())
	n := &pipeline.Notifier{
		Outbox:  &outbox.Outbox{Store: &outbox.MemoryStore{}, RetryBaseDelay: 10 * time.Millisecond},
		State:   &pipeline.MemoryState{},
		Apps:    testnotify.SyncedFunc(func() bool { return true }),
		Setup:   testnotify.ServicesFunc(buildServices),
		Metrics: metrics,
		Repos: repoPolicyFunc(func(app *watcher.App, repoURL string) error {
			mu.Lock()
			checked = append(checked, app.Key()+" "+app.Project+" "+repoURL)
			mu.Unlock()
			if strings.HasPrefix(repoURL, allowed) {
				return nil
			}
			return errors.New("not permitted by AppProject team-a spec.sourceRepos")
		}),
	}
	if err := n.Apply(cfg); err != nil {
		t.Fatal(err)
	}
	testnotify.RunTasks(t, n.Outbox.Start, n.Start)
	testwait.For(t, "notifier started", n.Started)

	// Hostile first: each is decided before anything is enqueued, so once
	// counted it can never reach GitHub.
	b := gh.URL + "/team-b/app.git"
	n.OnTransition(nil, githubTenantApp(t, "repourl", "on-new", nil, b))
	n.OnTransition(nil, githubTenantApp(t, "multi", "on-new", nil, b, gh.URL+"/team-a/app.git"))
	n.OnTransition(nil, githubTenantApp(t, "path", "on-path", map[string]any{"example.com/repo": "https://github.com/team-b/app"}, gh.URL+"/team-a/app.git"))
	n.OnTransition(nil, githubTenantApp(t, "other-host", "on-new", nil, "https://gitlab.example.com/team-b/app.git"))
	refused := metrics.RenderFailures("github", pipeline.RenderRefused)
	testwait.For(t, "four refused messages", func() bool { return testutil.ToFloat64(refused) == 4 })
	n.OnTransition(nil, githubTenantApp(t, "broken", "on-bad", nil, gh.URL+"/team-a/app.git"))
	failed := metrics.RenderFailures("github", pipeline.RenderError)
	testwait.For(t, "the failed render counted", func() bool { return testutil.ToFloat64(failed) == 1 })

	// Permitted: the Application's own repository, and one an
	// annotation names among team-a's.
	n.OnTransition(nil, githubTenantApp(t, "own", "on-new", nil, gh.URL+"/team-a/app.git"))
	n.OnTransition(nil, githubTenantApp(t, "path-own", "on-path", map[string]any{"example.com/repo": gh.URL + "/team-a/other"}, gh.URL+"/team-a/app.git"))
	want := []string{"POST /api/v3/repos/team-a/app/statuses/abc123", "POST /api/v3/repos/team-a/other/statuses/abc123"}
	testwait.For(t, "the permitted statuses", func() bool { return len(gh.All()) >= len(want) })
	got := gh.All()
	slices.Sort(got)
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("GitHub requests (-want +got):\n%s", d)
	}
	if got := testutil.ToFloat64(refused); got != 4 {
		t.Errorf("refused messages = %v, want 4", got)
	}
	mu.Lock()
	defer mu.Unlock()
	slices.Sort(checked)
	wantChecked := []string{
		"team-a/multi team-a " + gh.URL + "/team-b/app",
		"team-a/other-host team-a " + gh.URL + "/team-b/app",
		"team-a/own team-a " + gh.URL + "/team-a/app",
		"team-a/path team-a " + gh.URL + "/team-b/app",
		"team-a/path-own team-a " + gh.URL + "/team-a/other",
		"team-a/repourl team-a " + gh.URL + "/team-b/app",
	}
	if d := cmp.Diff(wantChecked, checked); d != "" {
		t.Errorf("repositories checked (-want +got):\n%s", d)
	}
}

// repoPolicyFunc is a pipeline.RepoPolicy that calls the func.
type repoPolicyFunc func(app *watcher.App, repoURL string) error

func (f repoPolicyFunc) CheckRepository(app *watcher.App, repoURL string) error {
	return f(app, repoURL)
}
