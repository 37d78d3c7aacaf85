package collect_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/crowsnest-dev/crowsnest/internal/testwait"
	gitwb "github.com/crowsnest-dev/crowsnest/writeback/git"
	"github.com/crowsnest-dev/crowsnest/writeback/git/collect"
)

// refusingWriter answers like writeback/git.Writer when the repositories
// in refused turned the push down and the others took it: a result per
// repository, and an error that joins the refusals.
type refusingWriter struct{ refused map[string]error }

func (w refusingWriter) Apply(_ context.Context, changes []gitwb.Change) ([]gitwb.Result, error) {
	var results []gitwb.Result
	var errs []error
	index := map[string]int{}
	for i := range changes {
		c := &changes[i]
		repo := gitwb.RepoID(c.RepoURL)
		n, seen := index[repo]
		if !seen {
			n, index[repo] = len(results), len(results)
			res := gitwb.Result{RepoURL: repo, Branch: "main", Err: w.refused[repo]}
			if res.Err != nil {
				errs = append(errs, fmt.Errorf("%s main: %w", repo, res.Err))
			} else {
				res.CommitSHA = "0123456789abcdef"
			}
			results = append(results, res)
		}
		res := &results[n]
		res.Keys = append(res.Keys, c.Key)
		if res.Err == nil {
			res.Updates = append(res.Updates, gitwb.Update{App: c.App, Key: c.Key, Image: "team/web", From: "1.0.0", To: "1.5.0"})
		}
	}
	return results, errors.Join(errs...)
}

// One repository of a batch refusing the push fails only its own
// Applications: the other repository's commit is reported as written, not
// retried as a failure (which would lose its Event and notification).
func TestGitBatchFailureOfOneRepositoryKeepsTheOthers(t *testing.T) {
	out := &outcomes{}
	b := &collect.Batcher{
		Writer: refusingWriter{refused: map[string]error{"http://git/bad.git": errors.New("git server refused the credentials")}},
		Delay:  time.Millisecond,
		Events: out,
		Queue:  out,
		Log:    slog.New(slog.DiscardHandler),
	}
	b.Add("ns/good", gitwb.Change{App: "good", RepoURL: "http://git/ok.git"})
	b.Add("ns/bad", gitwb.Change{App: "bad", RepoURL: "http://git/bad.git"})
	stop := start(t, b)
	testwait.For(t, "the batch to be written and reported", b.Idle)
	stop()
	for key, want := range map[string]string{"ns/good": collect.EventImagesUpdated, "ns/bad": collect.EventImageUpdateFailed} {
		if evs := out.eventsOf(key); len(evs) != 1 || evs[0].Reason != want {
			t.Errorf("Events of %s: %+v, want one %s", key, evs, want)
		}
	}
	if diff := cmp.Diff([]string{"ns/bad"}, out.retryList()); diff != "" {
		t.Errorf("retries (-want +got):\n%s", diff)
	}
}

// batchLog records the keys of each Apply.
type batchLog struct {
	mu      sync.Mutex
	batches [][]string
}

func (l *batchLog) Apply(_ context.Context, changes []gitwb.Change) ([]gitwb.Result, error) {
	res := gitwb.Result{RepoURL: "http://git/config.git", Branch: "main", CommitSHA: "0123456789abcdef"}
	for i := range changes {
		res.Keys = append(res.Keys, changes[i].Key)
	}
	l.mu.Lock()
	l.batches = append(l.batches, res.Keys)
	l.mu.Unlock()
	return []gitwb.Result{res}, nil
}

func (l *batchLog) list() [][]string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.batches)
}

// A batch past its Delay waits while the engine is still deciding, so an
// Application decided late (a loaded machine, a slow registry) joins the
// same commit instead of making one of its own.
func TestGitBatchWaitsForTheEngineToSettle(t *testing.T) {
	var busy atomic.Bool
	var asked atomic.Int64
	busy.Store(true)
	writes := &batchLog{}
	b := &collect.Batcher{
		Writer:   writes,
		Delay:    time.Millisecond,
		MaxDelay: time.Hour,
		Queue:    queueFunc(func() bool { asked.Add(1); return !busy.Load() }),
		Events:   &outcomes{},
		Log:      slog.New(slog.DiscardHandler),
	}
	stop := start(t, b)
	b.Add("ns/web", gitwb.Change{App: "web", RepoURL: "http://git/config.git"})
	// Past Delay and asking: the batch is being held open.
	testwait.For(t, "the batch to ask whether the engine is busy", func() bool { return asked.Load() >= 3 })
	if got := writes.list(); len(got) != 0 {
		t.Fatalf("written while the engine was busy: %v", got)
	}
	b.Add("ns/shop", gitwb.Change{App: "shop", RepoURL: "http://git/config.git"})
	if n := b.Pending(); n != 2 {
		t.Errorf("Pending() = %d with two Applications queued", n)
	}
	busy.Store(false)
	testwait.For(t, "the batch to be written", func() bool { return len(writes.list()) > 0 && b.Idle() })
	if n := b.Pending(); n != 0 {
		t.Errorf("Pending() = %d once the batch is written", n)
	}
	stop()
	if diff := cmp.Diff([][]string{{"ns/shop", "ns/web"}}, writes.list()); diff != "" {
		t.Errorf("batches (-want +got):\n%s", diff)
	}
}

// MaxDelay bounds the wait: an engine that never settles (thousands of
// Applications always being polled) does not hold a write back for ever.
func TestGitBatchMaxDelayBoundsTheWait(t *testing.T) {
	writes := &batchLog{}
	b := &collect.Batcher{
		Writer:   writes,
		Delay:    time.Millisecond,
		MaxDelay: 50 * time.Millisecond,
		Queue:    queueFunc(func() bool { return false }),
		Events:   &outcomes{},
		Log:      slog.New(slog.DiscardHandler),
	}
	stop := start(t, b)
	b.Add("ns/web", gitwb.Change{App: "web", RepoURL: "http://git/config.git"})
	testwait.For(t, "the batch to be written although the engine stays busy", func() bool { return len(writes.list()) > 0 && b.Idle() })
	stop()
	if diff := cmp.Diff([][]string{{"ns/web"}}, writes.list()); diff != "" {
		t.Errorf("batches (-want +got):\n%s", diff)
	}
}

// queueFunc is a Queue whose Idle is the func; it retries nothing.
type queueFunc func() bool

func (q queueFunc) Idle() bool { return q() }

func (queueFunc) EnqueueAfter(string, time.Duration) {}
