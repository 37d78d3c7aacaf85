package controller_test

import (
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes"

	"github.com/crowsnest-dev/crowsnest/config"
	"github.com/crowsnest-dev/crowsnest/controller"
	"github.com/crowsnest-dev/crowsnest/controller/tenancy"
	"github.com/crowsnest-dev/crowsnest/internal/testgit"
	"github.com/crowsnest-dev/crowsnest/notify"
	"github.com/crowsnest-dev/crowsnest/notify/render"
	"github.com/crowsnest-dev/crowsnest/watcher"
	gitwb "github.com/crowsnest-dev/crowsnest/writeback/git"
	"github.com/crowsnest-dev/crowsnest/writeback/git/repocreds"
)

// repoFixture is a password-protected Git server whose credentials are
// only in an Argo CD repo-creds Secret on the real apiserver, a second
// server on another host (port) taking the same password, and a
// NotifyRepo reading through crowsnest's Git cache with Argo CD's
// credentials.
type repoFixture struct {
	git, other *testgit.Server
	url, sha   string
	otherURL   string
	writer     *gitwb.Writer
	repo       *controller.NotifyRepo
}

func newRepoFixture(t *testing.T) *repoFixture {
	t.Helper()
	f := &repoFixture{
		git:   testgit.Start(t, testgit.Options{Password: "s3cret"}),
		other: testgit.Start(t, testgit.Options{Password: "s3cret"}),
	}
	f.url = f.git.CreateRepo(t, "apps")
	f.git.Seed(t, "apps", "main", map[string]string{"guestbook/Chart.yaml": "name: guestbook\n"}, "chart")
	f.sha = f.git.Seed(t, "apps", "main", map[string]string{
		"guestbook/values.yaml":      "image:\n  repository: ghcr.io/example/guestbook\n  tag: v1.0.0\nreplicas: 2\n",
		"guestbook/prod-values.yaml": "replicas: 3\n",
	}, "Deploy guestbook v2")
	f.git.Git(t, "apps", "tag", "v2.0.0", f.sha)
	f.otherURL = f.other.CreateRepo(t, "other")
	f.other.Seed(t, "other", "main", map[string]string{"a.txt": "a\n"}, "other")

	cs := kubernetes.NewForConfigOrDie(env.Config)
	ns := env.CreateNamespace(t, "argocd")
	// repo-creds for the first server's whole host, as Argo CD's docs
	// set them up for a Git host.
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "git-host", Labels: map[string]string{typeLabel: "repo-creds"}},
		Data:       map[string][]byte{"url": []byte(f.git.URL), "username": []byte("argocd"), "password": []byte("s3cret")},
	}
	if _, err := cs.CoreV1().Secrets(ns).Create(t.Context(), s, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.writer = &gitwb.Writer{
		CacheDir:    filepath.Join(t.TempDir(), "cache"),
		Credentials: &repocreds.ArgoCD{Client: cs, Namespace: ns},
		Timeout:     30 * time.Second,
		Metrics:     gitwb.NewMetrics(prometheus.NewRegistry()),
	}
	f.repo = &controller.NotifyRepo{Git: f.writer, Timeout: 30 * time.Second}
	return f
}

// appObject is an Application on repoURL at revision sha, subscribed to
// trigger on-commit of the "hook" service.
func appObject(name, repoURL, sha string) map[string]any {
	return map[string]any{
		"apiVersion": "argoproj.io/v1alpha1", "kind": "Application",
		"metadata": map[string]any{"name": name, "namespace": "argocd", "uid": "uid-" + name,
			"annotations": map[string]any{"notifications.argoproj.io/subscribe.on-commit.hook": ""}},
		"spec": map[string]any{
			"project": "default",
			"source": map[string]any{"repoURL": repoURL, "path": "guestbook", "targetRevision": "main",
				"helm": map[string]any{"valueFiles": []any{"prod-values.yaml"}, "parameters": []any{map[string]any{"name": "image.tag", "value": "v2.0.0"}}}},
			"destination": map[string]any{"server": "https://kubernetes.default.svc", "namespace": name},
		},
		"status": map[string]any{"sync": map[string]any{"status": "Synced", "revision": sha}},
	}
}

// Templates from Argo CD's notification docs, unchanged, rendered through
// the Notifier and delivered: the real commit's author, message and tag,
// and the chart's details, from a Git server whose credentials only an
// Argo CD repo-creds Secret holds.
func TestCommitMetadataThroughNotifier(t *testing.T) {
	f := newRepoFixture(t)
	var mu sync.Mutex
	var bodies []string
	sink := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		bodies = append(bodies, string(b))
		mu.Unlock()
	}))
	t.Cleanup(sink.Close)

	cfg := notifyConfig(sink.URL)
	cfg.Notifications.Catalog = false
	cfg.Notifications.Triggers = map[string][]config.Condition{
		// The condition reads the commit too, as Argo CD's expressions may.
		"on-commit": {{When: "app.status.sync.status == 'Synced' && repo.GetCommitMetadata(app.status.sync.revision).Author contains '<" + testgit.SeedEmail + ">'", Send: []string{"commit"}}},
	}
	cfg.Notifications.Templates = map[string]config.Template{"commit": {Webhook: map[string]config.WebhookTemplate{"hook": {
		Method: "POST",
		Body: `Author: {{(call .repo.GetCommitMetadata .app.status.sync.revision).Author}}
message: "{{(call .repo.GetCommitMetadata .app.status.sync.revision).Message}}"
tags: {{(call .repo.GetCommitMetadata .app.status.sync.revision).Tags}}
type: {{(call .repo.GetAppDetails).Type}} tag: {{(call .repo.GetAppDetails).Helm.GetParameterValueByName "image.tag"}} replicas: {{(call .repo.GetAppDetails).Helm.GetParameterValueByName "replicas"}}`,
	}}}}
	var synced atomicBool
	out := &notify.Outbox{Store: &notify.MemoryStore{}, RetryBaseDelay: 10 * time.Millisecond}
	n := &controller.Notifier{
		Outbox: out, State: &controller.MemoryNotifyState{}, Synced: synced.get,
		Metrics: controller.NewNotifierMetrics(prometheus.NewRegistry()), Services: hookServices,
		Repo: f.repo,
	}
	if err := n.Apply(cfg); err != nil {
		t.Fatal(err)
	}
	runTasks(t, out.Start, n.Start)
	waitFor(t, "notifier started", n.Started)
	synced.set(true)

	app, err := watcher.AppFromObject(&unstructured.Unstructured{Object: appObject("guestbook", f.url, f.sha)})
	if err != nil {
		t.Fatal(err)
	}
	n.OnTransition(nil, app)
	waitFor(t, "the webhook message", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(bodies) > 0
	})
	want := `Author: ` + testgit.SeedAuthor + ` <` + testgit.SeedEmail + `>
message: "Deploy guestbook v2"
tags: [v2.0.0]
type: Helm tag: v2.0.0 replicas: 3`
	mu.Lock()
	defer mu.Unlock()
	if bodies[0] != want {
		t.Errorf("body:\n%s\nwant:\n%s", bodies[0], want)
	}
}

type atomicBool struct {
	mu sync.Mutex
	v  bool
}

func (b *atomicBool) get() bool { b.mu.Lock(); defer b.mu.Unlock(); return b.v }
func (b *atomicBool) set(v bool) {
	b.mu.Lock()
	b.v = v
	b.mu.Unlock()
}

// An Application on another host gets none of Argo CD's credentials: the
// second server takes the same password, so reading it succeeds only if
// the first server's repo-creds were sent there.
func TestCommitMetadataNoCredentialsForAnotherHost(t *testing.T) {
	f := newRepoFixture(t)
	sha := f.other.Head(t, "other", "main")
	_, err := f.repo.CommitMetadata(t.Context(), appObject("evil", f.otherURL, sha), sha)
	if !errors.Is(err, gitwb.ErrAuth) {
		t.Fatalf("err = %v, want the server's refusal (no credentials sent)", err)
	}
	// And through a template, the render fails naming the function.
	app := appObject("evil", f.otherURL, sha)
	_, err = render.Once(notify.Template{Name: "t", Message: `{{(call .repo.GetCommitMetadata .app.status.sync.revision).Author}}`},
		controller.TemplateVarsRepo(t.Context(), f.repo, app, nil, nil, "webhook"))
	if err == nil || !strings.Contains(err.Error(), "repo.GetCommitMetadata "+sha) {
		t.Errorf("render err = %v, want one naming repo.GetCommitMetadata", err)
	}

	// The Application's own repository on the first server is read with
	// the repo-creds, and then answered from the cache: a second call
	// makes no request.
	md, err := f.repo.CommitMetadata(t.Context(), appObject("guestbook", f.url, f.sha), f.sha)
	if err != nil || md.Message != "Deploy guestbook v2" {
		t.Fatalf("own repository: %+v, %v", md, err)
	}
	f.git.ResetCounts()
	if _, err := f.repo.CommitMetadata(t.Context(), appObject("guestbook", f.url, f.sha), f.sha); err != nil {
		t.Fatal(err)
	}
	if n := f.git.Count(testgit.KindUploadPack) + f.git.Count(testgit.KindInfoRefs); n != 0 {
		t.Errorf("a cached commit made %d requests", n)
	}
}

// With the tenancy check, a repository the Application's AppProject does
// not permit is not read at all.
func TestCommitMetadataRefusedByProject(t *testing.T) {
	f := newRepoFixture(t)
	proj := &watcher.Project{Namespace: "argocd", Name: "team", Object: &unstructured.Unstructured{Object: map[string]any{
		"spec": map[string]any{"sourceRepos": []any{f.url}},
	}}}
	ten := &tenancy.Rules{Project: func(*watcher.App) *watcher.Project { return proj }}
	f.repo.Check = ten.CheckRepository
	app := appObject("evil", f.otherURL, "0123456789abcdef0123456789abcdef01234567")
	app["spec"].(map[string]any)["project"] = "team"
	f.other.ResetCounts()
	_, err := f.repo.CommitMetadata(t.Context(), app, "0123456789abcdef0123456789abcdef01234567")
	if !errors.Is(err, tenancy.ErrRefused) {
		t.Fatalf("err = %v, want ErrRefused", err)
	}
	if n := f.other.Count(testgit.KindInfoRefs); n != 0 {
		t.Errorf("the refused repository got %d requests", n)
	}
	own := appObject("guestbook", f.url, f.sha)
	own["spec"].(map[string]any)["project"] = "team"
	if _, err := f.repo.CommitMetadata(t.Context(), own, f.sha); err != nil {
		t.Errorf("permitted repository: %v", err)
	}
}

// `config validate` accepts triggers and templates that call Argo CD's
// repo helpers.
func TestCommitMetadataConfigValidates(t *testing.T) {
	cfg := notifyConfig("http://127.0.0.1:1")
	cfg.Notifications.Catalog = false
	cfg.Notifications.Triggers = map[string][]config.Condition{"on-commit": {{
		When: "repo.GetCommitMetadata(app.status.sync.revision).Author != '' && repo.GetAppDetails().Type == 'Helm'", Send: []string{"commit"},
	}}}
	cfg.Notifications.Templates = map[string]config.Template{"commit": {
		Message: `Author: {{(call .repo.GetCommitMetadata .app.status.sync.revision).Author}} {{(call .repo.GetAppDetails).Helm.GetParameterValueByName "image.tag"}}`,
	}}
	if err := controller.CheckNotifications(&cfg.Notifications); err != nil {
		t.Fatal(err)
	}
}

// A Git server that never answers fails the call when Timeout passes
// (the writer's own per-operation bound is far longer here).
func TestCommitMetadataBoundedTime(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var conns []net.Conn
	var mu sync.Mutex
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c) // held open, never answered
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		_ = ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			_ = c.Close()
		}
	})
	w := &gitwb.Writer{CacheDir: filepath.Join(t.TempDir(), "cache"), Timeout: 10 * time.Minute, Metrics: gitwb.NewMetrics(prometheus.NewRegistry())}
	r := &controller.NotifyRepo{Git: w, Timeout: 300 * time.Millisecond}
	url := "http://" + ln.Addr().String() + "/apps.git"
	sha := "0123456789abcdef0123456789abcdef01234567"
	_, err = r.CommitMetadata(t.Context(), appObject("stuck", url, sha), sha)
	if err == nil || !strings.Contains(err.Error(), "deadline") {
		t.Errorf("err = %v, want the deadline", err)
	}
}
