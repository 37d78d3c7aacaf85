package controller

import (
	"fmt"
	"sync"
)

// Outcomes of one Application's last reconcile, as PassTally counts them.
const (
	OutcomeUpdated  = "updated"    // changes patched, or queued for a Git commit
	OutcomeUpToDate = "up to date" // nothing to change
	OutcomeHeld     = "held"       // changes held by a sync window
	OutcomeFailed   = "failed"     // an error, an invalid annotation, a refused write
)

// PassTally keeps how each managed Application's last reconcile ended,
// for the one-line summary of a single pass (`run --once`). A nil
// *PassTally keeps nothing.
type PassTally struct {
	mu   sync.Mutex
	seen map[string]bool   // every Application reconciled
	last map[string]string // managed ones: their last outcome
}

// PassSummary is what a PassTally counted.
type PassSummary struct {
	Seen, Managed, Updated, UpToDate, Held, Failed int
}

func (t *PassTally) observe(key string) {
	if t == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.seen == nil {
		t.seen = map[string]bool{}
	}
	t.seen[key] = true
}

func (t *PassTally) record(key, outcome string) {
	if t == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.last == nil {
		t.last = map[string]string{}
	}
	t.last[key] = outcome
}

// forget drops an Application that is gone, or no longer managed.
func (t *PassTally) forget(key string, gone bool) {
	if t == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.last, key)
	if gone {
		delete(t.seen, key)
	}
}

// Summary counts the outcomes so far.
func (t *PassTally) Summary() PassSummary {
	if t == nil {
		return PassSummary{}
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	s := PassSummary{Seen: len(t.seen), Managed: len(t.last)}
	for _, o := range t.last {
		switch o {
		case OutcomeUpdated:
			s.Updated++
		case OutcomeUpToDate:
			s.UpToDate++
		case OutcomeHeld:
			s.Held++
		case OutcomeFailed:
			s.Failed++
		}
	}
	return s
}

// String is the summary line: "5 applications, 4 managed: 1 updated, 2
// up to date, 0 held, 1 failed".
func (s PassSummary) String() string {
	return fmt.Sprintf("%d applications, %d managed: %d updated, %d up to date, %d held, %d failed",
		s.Seen, s.Managed, s.Updated, s.UpToDate, s.Held, s.Failed)
}
