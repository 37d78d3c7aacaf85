package controller

import "testing"

func TestPassTallyKeepsEachApplicationsLastOutcome(t *testing.T) {
	var tally PassTally
	for _, k := range []string{"a/one", "a/two", "a/three", "a/four", "a/plain"} {
		tally.observe(k)
	}
	tally.record("a/one", OutcomeFailed)
	tally.record("a/one", OutcomeUpdated) // retried, then written
	tally.record("a/two", OutcomeUpToDate)
	tally.record("a/three", OutcomeHeld)
	tally.record("a/four", OutcomeFailed)
	tally.observe("a/gone")
	tally.record("a/gone", OutcomeUpdated)
	tally.forget("a/gone", true)
	want := PassSummary{Seen: 5, Managed: 4, Updated: 1, UpToDate: 1, Held: 1, Failed: 1}
	if got := tally.Summary(); got != want {
		t.Errorf("Summary() = %+v, want %+v", got, want)
	}
	if got, want := want.String(), "5 applications, 4 managed: 1 updated, 1 up to date, 1 held, 1 failed"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
	var none *PassTally
	none.observe("x")
	none.record("x", OutcomeUpdated)
	if got := none.Summary(); got != (PassSummary{}) {
		t.Errorf("nil tally counted %+v", got)
	}
}
