package git

import (
	"strings"
	"testing"

	"github.com/crowsnest-dev/crowsnest/internal/testgit"
)

// A push that landed but whose answer was lost (connection reset after
// git moved the branch) is a success: the retry finds the commit on the
// remote and reports it with its updates, instead of committing again or
// finding nothing left to do and reporting no update (which would lose
// the update's Event and notification).
func TestPushWhoseAnswerWasLost(t *testing.T) {
	s, url := seeded(t, testgit.Options{})
	w := newWriter(t, nil)
	s.DropPushAcks(1)
	res := mustApply(t, w, kustomizeWeb(url, "1.2.0"))
	if res.Err != nil || res.NoOp {
		t.Fatalf("result: err %v, no-op %v; want a success", res.Err, res.NoOp)
	}
	log := s.Log(t, "apps", "main")
	if len(log) != 2 {
		t.Fatalf("%d commits on main, want the seed and one update: %+v", len(log), log)
	}
	if res.CommitSHA != log[0].SHA {
		t.Errorf("result commit = %q, want the pushed commit %q", res.CommitSHA, log[0].SHA)
	}
	if len(res.Updates) != 1 || res.Updates[0].To != "1.2.0" || len(res.FilesChanged) != 1 {
		t.Errorf("result updates %+v, files %v; want the one update and its file", res.Updates, res.FilesChanged)
	}
	if res.Attempts != 2 {
		t.Errorf("attempts = %d, want 2", res.Attempts)
	}
	if got, _ := s.ReadFile(t, "apps", "main", "web/kustomization.yaml"); !strings.Contains(got, `"1.2.0"`) {
		t.Errorf("not written:\n%s", got)
	}
}
