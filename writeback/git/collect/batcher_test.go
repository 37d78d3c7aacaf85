package collect_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
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
// Applications: the other repository's commit is its Applications'
// outcome, written, not a failure (which would lose its Event and
// notification and retry it).
func TestGitBatchFailureOfOneRepositoryKeepsTheOthers(t *testing.T) {
	b := &collect.Batcher{
		Writer: refusingWriter{refused: map[string]error{"http://git/bad.git": errors.New("git server refused the credentials")}},
	}
	b.Add("ns/good", gitwb.Change{App: "good", RepoURL: "http://git/ok.git"})
	b.Add("ns/bad", gitwb.Change{App: "bad", RepoURL: "http://git/bad.git"})
	stop := start(t, b)
	testwait.For(t, "the batch to be written", func() bool { return b.Idle() })
	outs := stop()
	good, bad := outcomeOf(t, outs, "ns/good"), outcomeOf(t, outs, "ns/bad")
	if !good.Written() || good.Failed() {
		t.Errorf("ns/good: %+v, want written", good)
	}
	if want := []gitwb.Update{{App: "good", Key: "ns/good", Image: "team/web", From: "1.0.0", To: "1.5.0"}}; len(good.Results) != 1 ||
		good.Results[0].Commit != "0123456789abcdef" || !cmp.Equal(want, good.Results[0].Updates) {
		t.Errorf("ns/good results: %+v, want its update in commit 0123456789abcdef", good.Results)
	}
	if bad.Written() || !bad.Failed() || bad.Results[0].Refused || !strings.Contains(bad.Results[0].Err.Error(), "refused the credentials") {
		t.Errorf("ns/bad: %+v, want failed with the server's refusal", bad)
	}
}

// oneKeyWriter writes every change and names only the first
// Application's key in its result.
type oneKeyWriter struct{}

func (oneKeyWriter) Apply(_ context.Context, changes []gitwb.Change) ([]gitwb.Result, error) {
	return []gitwb.Result{{RepoURL: "http://git/config.git", Branch: "main", Keys: []string{changes[0].Key}}}, nil
}

// An Application the writer says nothing of has no result: the image
// reconciler fails and retries it (collect.ErrNoResult) rather than
// losing it. One named by a result that wrote nothing is unchanged.
func TestGitBatchApplicationWithoutResult(t *testing.T) {
	b := &collect.Batcher{Writer: oneKeyWriter{}}
	b.Add("ns/a", gitwb.Change{App: "a", RepoURL: "http://git/config.git"})
	b.Add("ns/b", gitwb.Change{App: "b", RepoURL: "http://git/config.git"})
	stop := start(t, b)
	testwait.For(t, "the batch to be written", func() bool { return b.Idle() })
	outs := stop()
	if a := outcomeOf(t, outs, "ns/a"); len(a.Results) != 1 || a.Written() || a.Failed() {
		t.Errorf("ns/a: %+v, want one result that wrote nothing", a)
	}
	if o := outcomeOf(t, outs, "ns/b"); len(o.Results) != 0 {
		t.Errorf("ns/b: %+v, want no result", o)
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
		MaxDelay: time.Hour,
		Engine:   activityFunc(func() bool { asked.Add(1); return !busy.Load() }),
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
		MaxDelay: 50 * time.Millisecond,
		Engine:   activityFunc(func() bool { return false }),
	}
	stop := start(t, b)
	b.Add("ns/web", gitwb.Change{App: "web", RepoURL: "http://git/config.git"})
	testwait.For(t, "the batch to be written although the engine stays busy", func() bool { return len(writes.list()) > 0 && b.Idle() })
	stop()
	if diff := cmp.Diff([][]string{{"ns/web"}}, writes.list()); diff != "" {
		t.Errorf("batches (-want +got):\n%s", diff)
	}
}

// activityFunc is an Activity whose Idle is the func.
type activityFunc func() bool

func (f activityFunc) Idle() bool { return f() }
