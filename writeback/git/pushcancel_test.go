package git

import (
	"context"
	"errors"
	"testing"

	"github.com/crowsnest-dev/crowsnest/internal/testgit"
)

// A shutdown (the context of Apply cancelled) while a push is under way
// does not abandon it: the push gets the writer's grace to finish, and
// its commit, which the remote has, is reported as written instead of as
// a failure that a retry in the next process would find "already made".
// When the answer is lost on top of that, the remote is asked, with a
// short deadline of its own, before the batch is reported.
func TestCancelDuringPush(t *testing.T) {
	tests := []struct {
		name       string
		dropAnswer bool
	}{
		{name: "the answer arrives within the grace"},
		{name: "the answer is lost", dropAnswer: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, url := seeded(t, testgit.Options{})
			w := newWriter(t, nil)
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			// The server has read the push's refs and is about to let git
			// take it: the shutdown starts now.
			s.BeforePush(cancel)
			if tt.dropAnswer {
				s.DropPushAcks(1)
			}
			res, err := w.Apply(ctx, []Change{kustomizeWeb(url, "1.2.0")})
			if ctx.Err() == nil {
				t.Fatal("the context was not cancelled during the push")
			}
			if err != nil || len(res) != 1 {
				t.Fatalf("Apply: %v, %d results; want one result and no error", err, len(res))
			}
			log := s.Log(t, "apps", "main")
			if len(log) != 2 {
				t.Fatalf("%d commits on main, want the seed and one update: %+v", len(log), log)
			}
			r := res[0]
			if r.Err != nil || r.NoOp || r.CommitSHA != log[0].SHA {
				t.Errorf("result: err %v, no-op %v, commit %q; want the pushed commit %q", r.Err, r.NoOp, r.CommitSHA, log[0].SHA)
			}
			if len(r.Updates) != 1 || r.Updates[0].To != "1.2.0" {
				t.Errorf("result updates %+v, want the one update", r.Updates)
			}
			if r.Attempts != 1 {
				t.Errorf("attempts = %d, want 1 (no retry after the cancel)", r.Attempts)
			}
		})
	}
}

// The last attempt's push losing its answer is not a failure when the
// remote has the commit: there is no later attempt to find it, so the
// writer looks before giving up.
func TestLastPushWhoseAnswerWasLost(t *testing.T) {
	s, url := seeded(t, testgit.Options{})
	w := newWriter(t, nil)
	w.MaxAttempts = 1
	s.DropPushAcks(1)
	res := mustApply(t, w, kustomizeWeb(url, "1.2.0"))
	if head := s.Head(t, "apps", "main"); res.Err != nil || res.CommitSHA != head {
		t.Fatalf("result: err %v, commit %q; want the pushed commit %q", res.Err, res.CommitSHA, head)
	}
	if len(res.Updates) != 1 || res.Updates[0].To != "1.2.0" {
		t.Errorf("result updates %+v, want the one update", res.Updates)
	}
}

// A push that fails on every attempt without reaching git stays a
// failure: looking on the remote finds nothing.
func TestPushThatNeverLandsIsAFailure(t *testing.T) {
	s, url := seeded(t, testgit.Options{})
	w := newWriter(t, nil)
	w.MaxAttempts = 2
	seed := s.Head(t, "apps", "main")
	s.RejectPushes(2)
	res, err := w.Apply(t.Context(), []Change{kustomizeWeb(url, "1.2.0")})
	if !errors.Is(err, ErrPushFailed) || len(res) != 1 || !errors.Is(res[0].Err, ErrPushFailed) || res[0].CommitSHA != "" {
		t.Fatalf("Apply: %v, results %+v; want ErrPushFailed and no commit", err, res)
	}
	if head := s.Head(t, "apps", "main"); head != seed {
		t.Errorf("main moved to %s", head)
	}
}
