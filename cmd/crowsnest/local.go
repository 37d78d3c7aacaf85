package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/crowsnest-dev/crowsnest/controller"
	"github.com/crowsnest-dev/crowsnest/notify"
	"github.com/crowsnest-dev/crowsnest/watcher"
	gitwb "github.com/crowsnest-dev/crowsnest/writeback/git"
	"github.com/crowsnest-dev/crowsnest/writeback/git/collect"
	"github.com/crowsnest-dev/crowsnest/writeback/kube"
)

// Local mode (--apps-dir) runs the same engine on Applications read from
// files. Git write-backs are real commits and pushes; Kubernetes-mode
// write-backs have no cluster to go to, so they patch an in-memory copy of
// each Application (made from its file on first write, through the same
// kube.Writer) and are reported by an Event line in the log. The files
// themselves are never modified.

// localApps is the in-memory copy of the Applications that Kubernetes-mode
// write-backs patch in local mode.
type localApps struct {
	files  *watcher.FileSource
	client *memApps
	writer *kube.Writer
	mu     sync.Mutex
}

func newLocalApps(files *watcher.FileSource, log *slog.Logger) *localApps {
	client := newMemApps()
	return &localApps{files: files, client: client, writer: &kube.Writer{Client: client, Log: log}}
}

var _ controller.ImageWriter = (*localApps)(nil)

// ApplyFrom implements controller.ImageWriter. The file's copy is not the
// in-memory one (no resourceVersion), so it is read first.
func (l *localApps) ApplyFrom(ctx context.Context, namespace, name string, _ *unstructured.Unstructured, overrides []kube.Override) (kube.Result, error) {
	if err := l.ensure(ctx, namespace, name); err != nil {
		return kube.Result{}, err
	}
	return l.writer.Apply(ctx, namespace, name, overrides)
}

// ensure copies the Application from its file into memory on first use.
func (l *localApps) ensure(ctx context.Context, namespace, name string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	apps := l.client.Resource(watcher.ApplicationsResource).Namespace(namespace)
	_, err := apps.Get(ctx, name, metav1.GetOptions{})
	if !apierrors.IsNotFound(err) {
		return err
	}
	obj, ok := l.files.Application(namespace + "/" + name)
	if !ok {
		return fmt.Errorf("application %s/%s is no longer in the folder", namespace, name)
	}
	obj.SetNamespace(namespace)
	obj.SetResourceVersion("1")
	_, err = apps.Create(ctx, obj, metav1.CreateOptions{})
	return err
}

// Patched returns the in-memory Application after Kubernetes-mode writes,
// or false when none was written.
func (l *localApps) Patched(ctx context.Context, namespace, name string) (*unstructured.Unstructured, bool) {
	u, err := l.client.Resource(watcher.ApplicationsResource).Namespace(namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, false
	}
	return u, true
}

// AppEvent is an Event crowsnest recorded on an Application.
type AppEvent struct {
	App     string `json:"app"`
	Type    string `json:"type"`
	Reason  string `json:"reason"`
	Message string `json:"message"`
}

// logEvents is local mode's EventRecorder: there is no apiserver to record
// Events in, so each one is a log line; Warnings count as failures for
// --once, and each Event goes to onEvent when set.
type logEvents struct {
	log      *slog.Logger
	mu       sync.Mutex
	warnings int
	onEvent  func(AppEvent)
}

func (l *logEvents) Event(object runtime.Object, typ, reason, msg string) {
	key := ""
	if ref, ok := object.(*corev1.ObjectReference); ok {
		key = ref.Namespace + "/" + ref.Name
	}
	level := slog.LevelInfo
	l.mu.Lock()
	if typ == corev1.EventTypeWarning {
		l.warnings++
		level = slog.LevelWarn
	}
	on := l.onEvent
	l.mu.Unlock()
	l.log.Log(context.Background(), level, "event", "app", key, "type", typ, "reason", reason, "message", msg)
	if on != nil {
		on(AppEvent{App: key, Type: typ, Reason: reason, Message: msg})
	}
}

func (l *logEvents) Warnings() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.warnings
}

// envGitCredentials are local mode's Git credentials: no cluster holds
// Argo CD's repository Secrets, so they come from the environment
// (CROWSNEST_GIT_USERNAME, CROWSNEST_GIT_PASSWORD), or from the repository
// URL's user information.
func envGitCredentials() gitwb.CredentialsSource {
	return gitwb.StaticCredentials{Username: os.Getenv("CROWSNEST_GIT_USERNAME"), Password: os.Getenv("CROWSNEST_GIT_PASSWORD")}
}

// passDone reports whether one local pass is complete: the engine synced
// and idle, no Git batch waiting or being written, and no notification
// pending in the outbox. It must hold for settle in a row, since one step
// hands work to the next (a reconcile to the Git batcher, a commit to a
// notification).
type passWaiter struct {
	engine *controller.Engine
	git    *collect.Batcher
	outbox *notify.Outbox
	settle time.Duration
}

func (w *passWaiter) idle(ctx context.Context) bool {
	if !w.engine.Idle() {
		return false
	}
	if w.git != nil && !w.git.Idle() {
		return false
	}
	if w.outbox != nil && w.outbox.Store != nil {
		recs, err := w.outbox.Store.List(ctx, notify.ListOptions{State: notify.StatePending})
		if err != nil || len(recs) > 0 {
			return false
		}
	}
	return true
}

// wait blocks until the pass is done or ctx ends.
func (w *passWaiter) wait(ctx context.Context) error {
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	var since time.Time
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
		if !w.idle(ctx) {
			since = time.Time{}
			continue
		}
		if since.IsZero() {
			since = time.Now()
		}
		if time.Since(since) >= w.settle {
			return nil
		}
	}
}

// deadLetters counts deliveries the outbox gave up on.
func deadLetters(ctx context.Context, out *notify.Outbox) int {
	if out == nil || out.Store == nil {
		return 0
	}
	recs, err := out.Store.List(ctx, notify.ListOptions{State: notify.StateDead})
	if err != nil {
		return 1
	}
	return len(recs)
}

// describeFileProblems names the application files that could not be
// read, or not wholly, for --once's closing error: a pass that ignored
// one is not a success, and the error says which without the log.
func describeFileProblems(problems []watcher.FileProblem) string {
	if len(problems) == 0 {
		return ""
	}
	parts := make([]string, len(problems))
	for i, p := range problems {
		parts[i] = p.String()
	}
	return "; application files: " + strings.Join(parts, "; ")
}
