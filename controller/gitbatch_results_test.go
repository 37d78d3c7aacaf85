package controller_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	"github.com/crowsnest-dev/crowsnest/controller"
	"github.com/crowsnest-dev/crowsnest/internal/testgit"
	"github.com/crowsnest-dev/crowsnest/internal/testwait"
	"github.com/crowsnest-dev/crowsnest/registry"
	"github.com/crowsnest-dev/crowsnest/triggers"
	"github.com/crowsnest-dev/crowsnest/watcher"
	gitwb "github.com/crowsnest-dev/crowsnest/writeback/git"
	"github.com/crowsnest-dev/crowsnest/writeback/git/collect"
)

// twoRepoWriter answers like writeback/git.Writer when one repository of
// a batch pushed and the other refused the credentials: a result per
// repository, and an error that joins the failed one's.
type twoRepoWriter struct{}

func (twoRepoWriter) Apply(_ context.Context, changes []gitwb.Change) ([]gitwb.Result, error) {
	refused := errors.New("git server refused the credentials")
	var ok, bad gitwb.Result
	ok.RepoURL, ok.Branch, ok.CommitSHA = "http://git/ok.git", "main", "0123456789abcdef"
	bad.RepoURL, bad.Branch, bad.Err = "http://git/bad.git", "main", refused
	for i := range changes {
		c := &changes[i]
		switch gitwb.RepoID(c.RepoURL) {
		case ok.RepoURL:
			ok.Keys = append(ok.Keys, c.Key)
			ok.Updates = append(ok.Updates, gitwb.Update{App: c.App, Key: c.Key, Image: "team/web", From: "1.0.0", To: "1.5.0"})
		case bad.RepoURL:
			bad.Keys = append(bad.Keys, c.Key)
		}
	}
	return []gitwb.Result{bad, ok}, fmt.Errorf("%s main: %w", bad.RepoURL, refused)
}

// appEvent is one Event as a test compares it.
type appEvent struct {
	Key, Type, Reason, Message string
}

// appEvents records every Event with its Application's namespace/name.
type appEvents struct {
	mu  sync.Mutex
	all []appEvent
}

func (l *appEvents) Event(obj runtime.Object, typ, reason, msg string) {
	ref := obj.(*corev1.ObjectReference)
	l.mu.Lock()
	defer l.mu.Unlock()
	l.all = append(l.all, appEvent{Key: ref.Namespace + "/" + ref.Name, Type: typ, Reason: reason, Message: msg})
}

func (l *appEvents) of(key string) []appEvent {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []appEvent
	for _, e := range l.all {
		if e.Key == key {
			out = append(out, e)
		}
	}
	return out
}

// gitNote is one image-updated notification as a test compares it.
type gitNote struct {
	Key, Image, To, Commit string
	Recovered              bool
}

// gitNotes is a Notify that keeps what it is handed.
type gitNotes struct {
	mu  sync.Mutex
	all []gitNote
}

func (*gitNotes) Announces() bool { return true }

func (n *gitNotes) OnEvent(app *watcher.App, ev triggers.Event) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.all = append(n.all, gitNote{Key: app.Key(), Image: ev.Image, To: ev.To, Commit: ev.Commit, Recovered: ev.Recovered})
}

func (n *gitNotes) list() []gitNote {
	n.mu.Lock()
	defer n.mu.Unlock()
	return slices.Clone(n.all)
}

// retryLog is a batcher's Queue (always idle) that keeps the keys it is
// handed to retry.
type retryLog struct {
	mu   sync.Mutex
	keys []string
}

func (*retryLog) Idle() bool { return true }

func (r *retryLog) EnqueueAfter(key string, _ time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.keys = append(r.keys, key)
}

func (r *retryLog) list() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.keys)
}

// gitAppDoc is an Application in Git mode whose kustomization at path
// names image.
func gitAppDoc(name, ns, image, repoURL, path, branch string) string {
	return fmt.Sprintf(`
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata:
  name: %[1]s
  namespace: %[2]s
  annotations:
    argocd-image-updater.argoproj.io/image-list: %[3]s:^1
    argocd-image-updater.argoproj.io/write-back-method: git
    argocd-image-updater.argoproj.io/write-back-target: kustomization
spec:
  project: default
  destination: {server: https://kubernetes.default.svc, namespace: %[1]s}
  source: {repoURL: %[4]q, path: %[5]s, targetRevision: %[6]s}
`, name, ns, image, repoURL, path, branch)
}

func kustomizationOf(image, tag string) string {
	return fmt.Sprintf("resources:\n- deployment.yaml\nimages:\n- name: %s\n  newTag: %s\n", image, tag)
}

// gitRequest creates the Application doc describes in the apiserver,
// running image at 1.0.0 as Argo CD would record it, and returns the
// request a reconcile of it gets.
func gitRequest(t *testing.T, ns, doc, image string) controller.Request {
	t.Helper()
	createAppsRunning(t, setupApps(t, ns), 1, func(int) string { return doc }, func(int) string { return image + ":1.0.0" })
	var obj map[string]any
	if err := yaml.Unmarshal([]byte(doc), &obj); err != nil {
		t.Fatal(err)
	}
	return requestOf(t, ns, (&unstructured.Unstructured{Object: obj}).GetName())
}

// testGitWriter is a writer that retries fast.
func testGitWriter(t *testing.T) *gitwb.Writer {
	t.Helper()
	return &gitwb.Writer{CacheDir: t.TempDir(), Backoff: 10 * time.Millisecond, MaxBackoff: 50 * time.Millisecond, Timeout: 30 * time.Second}
}

// runBatch reconciles reqs with images, whose Git batcher then writes
// what they decided in one batch; it returns once the batch is reported.
func runBatch(t *testing.T, images *controller.ImageReconciler, reqs ...controller.Request) {
	t.Helper()
	for _, req := range reqs {
		if _, err := images.Reconcile(t.Context(), req); err != nil {
			t.Fatalf("reconciling %s: %v", req.Key, err)
		}
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- images.RunGit(ctx) }()
	testwait.For(t, "the batch to be written and reported", images.Git.Idle)
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// appLookup is an ImageReconciler's WorkQueue over the requests'
// Applications; it retries nothing.
func appLookup(reqs ...controller.Request) *appsByKey { return appsRetrying(nil, reqs...) }

// appsRetrying is appLookup keeping the retries in retries.
func appsRetrying(retries *retryLog, reqs ...controller.Request) *appsByKey {
	a := &appsByKey{apps: map[string]*watcher.App{}, retries: retries}
	for _, r := range reqs {
		a.apps[r.Key] = r.App
	}
	return a
}

// appsByKey is a WorkQueue that knows these Applications and runs no
// first pass.
type appsByKey struct {
	apps    map[string]*watcher.App
	retries *retryLog
}

func (a *appsByKey) App(key string) *watcher.App { return a.apps[key] }

func (*appsByKey) Enqueue(string) {}

func (a *appsByKey) EnqueueAfter(key string, d time.Duration) {
	if a.retries != nil {
		a.retries.EnqueueAfter(key, d)
	}
}

func (*appsByKey) InFirstPass() bool { return false }

// Two Applications named web, in two namespaces, write to one repository
// in one batch (team-a's on main, team-b's on release, so each write is
// a commit of its own): each hears only of its own write, with its own
// commit, in its Event and its notification.
func TestGitBatchSameNameInTwoNamespaces(t *testing.T) {
	_, image := appRegistry(t)
	srv := testgit.Start(t, testgit.Options{})
	repo := srv.CreateRepo(t, "apps")
	srv.Seed(t, "apps", "main", map[string]string{
		"team-a/web/kustomization.yaml": kustomizationOf(image, "1.0.0"),
		"team-b/web/kustomization.yaml": kustomizationOf(image, "1.0.0"),
	}, "seed")
	srv.SeedFrom(t, "apps", "release", "main", map[string]string{"RELEASE": "release\n"}, "release branch")

	nsA, nsB := env.CreateNamespace(t, "team-a"), env.CreateNamespace(t, "team-b")
	a := gitRequest(t, nsA, gitAppDoc("web", nsA, image, repo, "team-a/web", "main"), image)
	b := gitRequest(t, nsB, gitAppDoc("web", nsB, image, repo, "team-b/web", "release"), image)

	events, notes, retries := &appEvents{}, &gitNotes{}, &retryLog{}
	metrics := controller.NewImageMetrics(prometheus.NewRegistry())
	log := slog.New(slog.DiscardHandler)
	images := &controller.ImageReconciler{Registry: &registry.Client{}, Events: events, Notifier: notes, Queue: appsRetrying(retries, a, b),
		Metrics: metrics, Log: log}
	images.Git = &collect.Batcher{Writer: testGitWriter(t)}
	runBatch(t, images, a, b)

	shaA, shaB := srv.Head(t, "apps", "main"), srv.Head(t, "apps", "release")
	for _, tt := range []struct {
		key, sha, other, branch string
	}{
		{key: a.Key, sha: shaA, other: shaB, branch: "main"},
		{key: b.Key, sha: shaB, other: shaA, branch: "release"},
	} {
		evs := events.of(tt.key)
		if len(evs) != 1 || evs[0].Type != corev1.EventTypeNormal || evs[0].Reason != controller.EventImagesUpdated {
			t.Errorf("Events of %s: %+v; want one ImagesUpdated", tt.key, evs)
			continue
		}
		if msg := evs[0].Message; !strings.Contains(msg, "commit "+tt.sha[:12]+" on "+tt.branch) || strings.Contains(msg, tt.other[:12]) {
			t.Errorf("Event of %s says %q; want its own commit %s on %s only", tt.key, msg, tt.sha[:12], tt.branch)
		}
	}
	want := []gitNote{
		{Key: a.Key, Image: image, To: "1.1.0", Commit: shaA},
		{Key: b.Key, Image: image, To: "1.1.0", Commit: shaB},
	}
	got := notes.list()
	slices.SortFunc(got, func(x, y gitNote) int { return strings.Compare(x.Key, y.Key) })
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("notifications (-want +got):\n%s", diff)
	}
	if r := retries.list(); len(r) != 0 {
		t.Errorf("retried %q, want nothing", r)
	}
}

// A write-back that fails, to a repository whose URL carries the
// credentials (https://user:token@host/...), is reported against its
// Application as for any other URL: a Warning Event without the token, a
// retry, and a failure counted. Whether the batch failed before editing
// anything (the server down, the credentials refused: no update in the
// result to tell whose it is) or at the push.
func TestGitBatchFailureWithCredentialsInTheURL(t *testing.T) {
	const user, token = "bot", "s3cret-token-123"
	tests := []struct {
		name  string
		fault func(srv *testgit.Server, attempts int)
	}{
		{name: "server down", fault: func(srv *testgit.Server, _ int) { srv.SetDown(time.Hour, testgit.Down503) }},
		{name: "credentials refused", fault: func(srv *testgit.Server, _ int) { srv.SetAuthFailure(true) }},
		{name: "push refused", fault: func(srv *testgit.Server, attempts int) { srv.RejectPushes(attempts) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, image := appRegistry(t)
			srv := testgit.Start(t, testgit.Options{Username: user, Password: token})
			srv.CreateRepo(t, "apps")
			seed := srv.Seed(t, "apps", "main", map[string]string{"web/kustomization.yaml": kustomizationOf(image, "1.0.0")}, "seed")
			repo := strings.Replace(srv.RepoURL("apps"), "://", "://"+user+":"+token+"@", 1)

			ns := env.CreateNamespace(t, "creds-url")
			req := gitRequest(t, ns, gitAppDoc("web", ns, image, repo, "web", "main"), image)

			events, retries := &appEvents{}, &retryLog{}
			reg := prometheus.NewRegistry()
			metrics := controller.NewImageMetrics(reg)
			log := slog.New(slog.DiscardHandler)
			w := testGitWriter(t)
			w.MaxAttempts = 2
			images := &controller.ImageReconciler{Registry: &registry.Client{}, Events: events, Queue: appsRetrying(retries, req), Metrics: metrics, Log: log}
			images.Git = &collect.Batcher{Writer: w}
			tt.fault(srv, w.MaxAttempts)
			runBatch(t, images, req)

			evs := events.of(req.Key)
			if len(evs) != 1 || evs[0].Type != corev1.EventTypeWarning || evs[0].Reason != controller.EventImageUpdateFailed {
				t.Fatalf("Events: %+v; want one ImageUpdateFailed", evs)
			}
			if strings.Contains(evs[0].Message, token) {
				t.Errorf("the Event shows the token: %q", evs[0].Message)
			}
			if diff := cmp.Diff([]string{req.Key}, retries.list()); diff != "" {
				t.Errorf("retries (-want +got):\n%s", diff)
			}
			if got := counter(t, reg, "crowsnest_image_updates_total", map[string]string{"method": "git", "result": "error"}); got != 1 {
				t.Errorf("crowsnest_image_updates_total{method=git,result=error} = %v, want 1", got)
			}
			if head := srv.Head(t, "apps", "main"); head != seed {
				t.Errorf("main moved to %s", head)
			}
		})
	}
}
