package daemon

import (
	"context"
	"os"
	"strings"
	"time"

	"github.com/crowsnest-dev/crowsnest/controller"
	"github.com/crowsnest-dev/crowsnest/notify/outbox"
	"github.com/crowsnest-dev/crowsnest/watcher"
	gitwb "github.com/crowsnest-dev/crowsnest/writeback/git"
	"github.com/crowsnest-dev/crowsnest/writeback/git/collect"
)

// Local mode (--apps-dir) runs the same engine on Applications read from
// files. Git write-backs are real commits and pushes; Kubernetes-mode
// write-backs patch an in-memory copy of each Application
// (internal/localkube) and are reported by an Event line in the log.

// envGitCredentials are local mode's Git credentials: no cluster holds
// Argo CD's repository Secrets, so they come from the environment
// (CROWSNEST_GIT_USERNAME, CROWSNEST_GIT_PASSWORD), or from the repository
// URL's user information.
func envGitCredentials() gitwb.CredentialsSource {
	return gitwb.StaticCredentials{Username: os.Getenv("CROWSNEST_GIT_USERNAME"), Password: os.Getenv("CROWSNEST_GIT_PASSWORD")}
}

// passWaiter tells whether one pass is complete: the engine synced
// and idle, no Git batch waiting or being written, and no notification
// pending in the outbox. It must hold for settle in a row, since one step
// hands work to the next (a reconcile to the Git batcher, a commit to a
// notification).
type passWaiter struct {
	engine *controller.Engine
	git    *collect.Batcher
	outbox *outbox.Outbox
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
		recs, err := w.outbox.Store.List(ctx, outbox.ListOptions{State: outbox.StatePending})
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
func deadLetters(ctx context.Context, out *outbox.Outbox) int {
	if out == nil || out.Store == nil {
		return 0
	}
	recs, err := out.Store.List(ctx, outbox.ListOptions{State: outbox.StateDead})
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
