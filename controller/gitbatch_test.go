package controller_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime"

	corev1 "k8s.io/api/core/v1"

	"github.com/crowsnest-dev/crowsnest/controller"
	gitwb "github.com/crowsnest-dev/crowsnest/writeback/git"
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
	for _, c := range changes {
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

type batchEvents struct {
	mu     sync.Mutex
	events []string
}

func (l *batchEvents) Event(obj runtime.Object, _, reason, _ string) {
	ref := obj.(*corev1.ObjectReference)
	l.mu.Lock()
	defer l.mu.Unlock()
	l.events = append(l.events, ref.Name+" "+reason)
}

func (l *batchEvents) list() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Sorted(slices.Values(l.events))
}

// One repository of a batch refusing the push fails only its own
// Applications: the other repository's commit is reported as written, not
// retried as a failure (which would lose its Event and notification).
func TestGitBatchFailureOfOneRepositoryKeepsTheOthers(t *testing.T) {
	events := &batchEvents{}
	var (
		mu      sync.Mutex
		retried []string
	)
	b := &controller.GitBatcher{
		Writer: twoRepoWriter{},
		Delay:  time.Millisecond,
		Events: events,
		Enqueue: func(key string, _ time.Duration) {
			mu.Lock()
			defer mu.Unlock()
			retried = append(retried, key)
		},
		Log: slog.New(slog.DiscardHandler),
	}
	b.Add("ns/good", gitwb.Change{App: "good", RepoURL: "http://git/ok.git"})
	b.Add("ns/bad", gitwb.Change{App: "bad", RepoURL: "http://git/bad.git"})
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- b.Start(ctx) }()
	deadline := time.Now().Add(waitTimeout)
	for len(events.list()) < 2 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	want := []string{"bad " + controller.EventImageUpdateFailed, "good " + controller.EventImagesUpdated}
	if got := events.list(); !slices.Equal(got, want) {
		t.Errorf("events %q, want %q", got, want)
	}
	mu.Lock()
	defer mu.Unlock()
	if !slices.Equal(retried, []string{"ns/bad"}) {
		t.Errorf("retried %q, want only ns/bad", retried)
	}
}
