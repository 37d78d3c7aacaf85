package collect_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

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

// A change the writer refused for its file (outside what its Application
// renders from) is a refused result, with the file and the rule named: the
// image reconciler does not retry it, since retrying cannot change the
// answer. A broken change is a plain failure, retried; the others are
// written.
func TestGitBatchRefusedChange(t *testing.T) {
	b := &collect.Batcher{Writer: scopeWriter{refused: "team-b/web", broken: "team-c/web"}}
	for _, k := range []string{"team-a/web", "team-b/web", "team-c/web"} {
		b.Add(k, gitwb.Change{App: "web", RepoURL: "http://git/mono.git"})
	}
	stop := start(t, b)
	testwait.For(t, "the batch to be written", func() bool { return b.Idle() })
	outs := stop()
	if a := outcomeOf(t, outs, "team-a/web"); !a.Written() || a.Failed() {
		t.Errorf("team-a/web: %+v, want written", a)
	}
	refused := outcomeOf(t, outs, "team-b/web")
	if !refused.Failed() || len(refused.Results) != 1 || !refused.Results[0].Refused ||
		!strings.Contains(refused.Results[0].Err.Error(), "team-a/prod/kustomization.yaml (rule: ") {
		t.Errorf("team-b/web: %+v, want one refused result naming the file and the rule", refused)
	}
	broken := outcomeOf(t, outs, "team-c/web")
	if !broken.Failed() || len(broken.Results) != 1 || broken.Results[0].Refused || !errors.Is(broken.Results[0].Err, gitwb.ErrInvalidChange) {
		t.Errorf("team-c/web: %+v, want one failed result, not refused", broken)
	}
}
