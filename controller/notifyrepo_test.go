package controller_test

import (
	"errors"
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
	"github.com/crowsnest-dev/crowsnest/controller/tenancy"
	"github.com/crowsnest-dev/crowsnest/internal/kubecore/kubecoretest"
	"github.com/crowsnest-dev/crowsnest/internal/testgit"
	"github.com/crowsnest-dev/crowsnest/internal/testnotify"
	"github.com/crowsnest-dev/crowsnest/internal/testwait"
	"github.com/crowsnest-dev/crowsnest/notify"
	"github.com/crowsnest-dev/crowsnest/notify/outbox"
	"github.com/crowsnest-dev/crowsnest/notify/pipeline"
	"github.com/crowsnest-dev/crowsnest/notify/render"
	"github.com/crowsnest-dev/crowsnest/watcher"
	gitwb "github.com/crowsnest-dev/crowsnest/writeback/git"
	"github.com/crowsnest-dev/crowsnest/writeback/git/repocreds"
)

// repoFixture is a password-protected Git server whose credentials are
// only in an Argo CD repo-creds Secret on the real apiserver, a second
// server on another host (port) taking the same password, and a
// pipeline.Repo reading through crowsnest's Git cache with Argo CD's
// credentials.
type repoFixture struct {
	git, other *testgit.Server
	url, sha   string
	otherURL   string
	writer     *gitwb.Writer
	repo       *pipeline.Repo
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
		Credentials: &repocreds.ArgoCD{Client: kubecoretest.Wrap(cs), Namespace: ns},
		Timeout:     30 * time.Second,
		Metrics:     gitwb.NewMetrics(prometheus.NewRegistry()),
	}
	f.repo = &pipeline.Repo{Git: f.writer, Timeout: 30 * time.Second}
	return f
}

// Templates from Argo CD's notification docs, unchanged, rendered through
// the Notifier and delivered: the real commit's author, message and tag,
// and the chart's details, from a Git server whose credentials only an
// Argo CD repo-creds Secret holds.
func TestCommitMetadataThroughNotifier(t *testing.T) {
	f := newRepoFixture(t)
	sink := testnotify.NewRecorder(t, testnotify.RecorderOptions{})

	cfg := testnotify.Config(sink.URL)
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
	out := &outbox.Outbox{Store: &outbox.MemoryStore{}, RetryBaseDelay: 10 * time.Millisecond}
	n := &pipeline.Notifier{
		Outbox: out, State: &pipeline.MemoryState{}, Apps: testnotify.SyncedFunc(synced.get),
		Metrics: pipeline.NewMetrics(prometheus.NewRegistry()), Setup: testnotify.HookSetup,
		Repo: f.repo,
	}
	if err := n.Apply(cfg); err != nil {
		t.Fatal(err)
	}
	testnotify.RunTasks(t, out.Start, n.Start)
	testwait.For(t, "notifier started", n.Started)
	synced.set(true)

	app, err := watcher.AppFromObject(&unstructured.Unstructured{Object: testnotify.AppObject("guestbook", f.url, f.sha)})
	if err != nil {
		t.Fatal(err)
	}
	n.OnTransition(nil, app)
	testwait.For(t, "the webhook message", func() bool { return len(sink.Bodies()) > 0 })
	want := `Author: ` + testgit.SeedAuthor + ` <` + testgit.SeedEmail + `>
message: "Deploy guestbook v2"
tags: [v2.0.0]
type: Helm tag: v2.0.0 replicas: 3`
	if bodies := sink.Bodies(); bodies[0] != want {
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
	_, err := f.repo.CommitMetadata(t.Context(), testnotify.AppObject("evil", f.otherURL, sha), sha)
	if !errors.Is(err, gitwb.ErrAuth) {
		t.Fatalf("err = %v, want the server's refusal (no credentials sent)", err)
	}
	// And through a template, the render fails naming the function.
	app := testnotify.AppObject("evil", f.otherURL, sha)
	_, err = render.Once(notify.Template{Name: "t", Message: `{{(call .repo.GetCommitMetadata .app.status.sync.revision).Author}}`},
		pipeline.TemplateVarsRepo(t.Context(), f.repo, app, nil, nil, "webhook"))
	if err == nil || !strings.Contains(err.Error(), "repo.GetCommitMetadata "+sha) {
		t.Errorf("render err = %v, want one naming repo.GetCommitMetadata", err)
	}

	// The Application's own repository on the first server is read with
	// the repo-creds, and then answered from the cache: a second call
	// makes no request.
	md, err := f.repo.CommitMetadata(t.Context(), testnotify.AppObject("guestbook", f.url, f.sha), f.sha)
	if err != nil || md.Message != "Deploy guestbook v2" {
		t.Fatalf("own repository: %+v, %v", md, err)
	}
	f.git.ResetCounts()
	if _, err := f.repo.CommitMetadata(t.Context(), testnotify.AppObject("guestbook", f.url, f.sha), f.sha); err != nil {
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
	ten := &tenancy.Rules{Projects: oneProject{proj}}
	f.repo.Policy = ten
	app := testnotify.AppObject("evil", f.otherURL, "0123456789abcdef0123456789abcdef01234567")
	app["spec"].(map[string]any)["project"] = "team"
	f.other.ResetCounts()
	_, err := f.repo.CommitMetadata(t.Context(), app, "0123456789abcdef0123456789abcdef01234567")
	if !errors.Is(err, tenancy.ErrRefused) {
		t.Fatalf("err = %v, want ErrRefused", err)
	}
	if n := f.other.Count(testgit.KindInfoRefs); n != 0 {
		t.Errorf("the refused repository got %d requests", n)
	}
	own := testnotify.AppObject("guestbook", f.url, f.sha)
	own["spec"].(map[string]any)["project"] = "team"
	if _, err := f.repo.CommitMetadata(t.Context(), own, f.sha); err != nil {
		t.Errorf("permitted repository: %v", err)
	}
}

// oneProject is a tenancy.Projects under which every Application belongs
// to the one AppProject.
type oneProject struct{ p *watcher.Project }

func (o oneProject) Project(*watcher.App) *watcher.Project { return o.p }
