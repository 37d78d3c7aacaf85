package collect_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

	gitwb "github.com/crowsnest-dev/crowsnest/writeback/git"
	"github.com/crowsnest-dev/crowsnest/writeback/git/collect"
)

// waitTimeout bounds the waits on a channel in these tests, as
// testwait.Timeout bounds the polls.
const waitTimeout = 60 * time.Second

// appEvent is one Event as a test compares it.
type appEvent struct {
	Key, Type, Reason, Message string
}

// gitNote is one update announced, as a test compares it.
type gitNote struct {
	Key, Image, To, Commit string
}

// outcomes keeps what a Batcher reports, for the tests to compare: its
// Events (it is the EventRecorder), announcements (it is the Listener) and
// retries (it is the Queue, always idle).
type outcomes struct {
	mu      sync.Mutex
	events  []appEvent
	notes   []gitNote
	retries []string
}

func (o *outcomes) Event(obj runtime.Object, typ, reason, msg string) {
	ref := obj.(*corev1.ObjectReference)
	o.mu.Lock()
	defer o.mu.Unlock()
	o.events = append(o.events, appEvent{Key: ref.Namespace + "/" + ref.Name, Type: typ, Reason: reason, Message: msg})
}

func (o *outcomes) GitWritten(key, commit string, written []gitwb.Update) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, u := range written {
		o.notes = append(o.notes, gitNote{Key: key, Image: u.Image, To: u.To, Commit: commit})
	}
}

func (*outcomes) GitAnnounced(context.Context, string, []gitwb.Change) {}

func (*outcomes) GitUnchanged(context.Context, string, []gitwb.Change) {}

func (*outcomes) Idle() bool { return true }

func (o *outcomes) EnqueueAfter(key string, _ time.Duration) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.retries = append(o.retries, key)
}

// eventsOf is the Events recorded on the Application key.
func (o *outcomes) eventsOf(key string) []appEvent {
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.DeleteFunc(slices.Clone(o.events), func(e appEvent) bool { return e.Key != key })
}

func (o *outcomes) noteList() []gitNote {
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.Clone(o.notes)
}

func (o *outcomes) retryList() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.Clone(o.retries)
}

// start runs b until stop, which waits for Start to return.
func start(t *testing.T, b *collect.Batcher) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- b.Start(ctx) }()
	return func() {
		t.Helper()
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
}

// testGitWriter is a writer that retries fast.
func testGitWriter(t *testing.T) *gitwb.Writer {
	t.Helper()
	return &gitwb.Writer{CacheDir: t.TempDir(), Backoff: 10 * time.Millisecond, MaxBackoff: 50 * time.Millisecond, Timeout: 30 * time.Second}
}

func kustomizationOf(image, tag string) string {
	return fmt.Sprintf("resources:\n- deployment.yaml\nimages:\n- name: %s\n  newTag: %s\n", image, tag)
}
