package controller_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

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

// One repository of a batch refusing the push fails only its own
// Applications: the other repository's commit is reported as written, not
// retried as a failure (which would lose its Event and notification).
func TestGitBatchFailureOfOneRepositoryKeepsTheOthers(t *testing.T) {
	events, retries := &appEvents{}, &retryLog{}
	b := &controller.GitBatcher{
		Writer:  twoRepoWriter{},
		Delay:   time.Millisecond,
		Events:  events,
		Enqueue: retries.enqueue,
		Log:     slog.New(slog.DiscardHandler),
	}
	b.Add("ns/good", gitwb.Change{App: "good", RepoURL: "http://git/ok.git"})
	b.Add("ns/bad", gitwb.Change{App: "bad", RepoURL: "http://git/bad.git"})
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- b.Start(ctx) }()
	waitFor(t, "the batch to be written and reported", b.Idle)
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	for key, want := range map[string]string{"ns/good": controller.EventImagesUpdated, "ns/bad": controller.EventImageUpdateFailed} {
		if evs := events.of(key); len(evs) != 1 || evs[0].Reason != want {
			t.Errorf("Events of %s: %+v, want one %s", key, evs, want)
		}
	}
	if diff := cmp.Diff([]string{"ns/bad"}, retries.list()); diff != "" {
		t.Errorf("retries (-want +got):\n%s", diff)
	}
}
