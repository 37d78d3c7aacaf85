package collect_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/crowsnest-dev/crowsnest/internal/testwait"
	gitwb "github.com/crowsnest-dev/crowsnest/writeback/git"
	"github.com/crowsnest-dev/crowsnest/writeback/git/collect"
)

// scopeWriter answers like writeback/git.Writer when the changes of
// refused wrote outside what their Application renders from and those of
// broken named a file that is not YAML: one commit of the others.
type scopeWriter struct{ refused, broken string }

func (w scopeWriter) Apply(_ context.Context, changes []gitwb.Change) ([]gitwb.Result, error) {
	res := gitwb.Result{RepoURL: "http://git/mono.git", Branch: "main", CommitSHA: "0123456789abcdef"}
	var errs []error
	for i := range changes {
		c := &changes[i]
		res.Keys = append(res.Keys, c.Key)
		var err error
		switch c.Key {
		case w.refused:
			err = fmt.Errorf("%w: team-a/prod/kustomization.yaml (rule: ...)", gitwb.ErrOutsideScope)
		case w.broken:
			err = fmt.Errorf("%w: list.yaml: not a mapping", gitwb.ErrInvalidChange)
		default:
			res.Updates = append(res.Updates, gitwb.Update{App: c.App, Key: c.Key, Image: "team/web", From: "1.0.0", To: "1.5.0"})
			continue
		}
		ce := &gitwb.ChangeError{App: c.App, Key: c.Key, Err: err}
		res.Failed = append(res.Failed, ce)
		errs = append(errs, ce)
	}
	return []gitwb.Result{res}, errors.Join(errs...)
}

// counts is a Metrics that keeps its counts.
type counts struct {
	mu sync.Mutex
	n  map[string]int
}

func (c *counts) GitUpdates(result string, n int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n[result] += n
}

// A change the writer refused for its file (outside what its Application
// renders from) gives its Application a WriteBackRefused Event and the
// refused count, and no retry: retrying cannot change the answer. A
// broken change is still a failure, retried; the others are written.
func TestGitBatchRefusedChange(t *testing.T) {
	out := &outcomes{}
	m := &counts{n: map[string]int{}}
	b := &collect.Batcher{
		Writer:  scopeWriter{refused: "team-b/web", broken: "team-c/web"},
		Delay:   time.Millisecond,
		Events:  out,
		Queue:   out,
		Metrics: m,
		Log:     slog.New(slog.DiscardHandler),
	}
	for _, k := range []string{"team-a/web", "team-b/web", "team-c/web"} {
		b.Add(k, gitwb.Change{App: "web", RepoURL: "http://git/mono.git"})
	}
	stop := start(t, b)
	testwait.For(t, "the batch to be written and reported", b.Idle)
	stop()
	for key, want := range map[string]string{
		"team-a/web": collect.EventImagesUpdated,
		"team-b/web": collect.EventWriteBackRefused,
		"team-c/web": collect.EventImageUpdateFailed,
	} {
		if evs := out.eventsOf(key); len(evs) != 1 || evs[0].Reason != want {
			t.Errorf("Events of %s: %+v, want one %s", key, evs, want)
		}
	}
	if evs := out.eventsOf("team-b/web"); len(evs) == 1 && !strings.Contains(evs[0].Message, "team-a/prod/kustomization.yaml (rule: ") {
		t.Errorf("refusal %q names neither the file nor the rule", evs[0].Message)
	}
	if diff := cmp.Diff([]string{"team-c/web"}, out.retryList()); diff != "" {
		t.Errorf("retries (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]int{"success": 1, "refused": 1, "error": 1}, m.n); diff != "" {
		t.Errorf("GitUpdates (-want +got):\n%s", diff)
	}
}
