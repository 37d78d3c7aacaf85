package faults

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// row is one line of the fault table.
type row struct {
	scenario string
	faults   string
	tally
	took   time.Duration
	result string
}

var (
	reportMu sync.Mutex
	rows     []row
	// notes are lines printed under the table (seeds, failover times).
	notes []string
)

func record(r row) {
	reportMu.Lock()
	defer reportMu.Unlock()
	rows = append(rows, r)
}

func note(format string, args ...any) {
	reportMu.Lock()
	defer reportMu.Unlock()
	notes = append(notes, fmt.Sprintf(format, args...))
}

// writeReport prints the table (Markdown) to out and, when path is set,
// to that file too.
func writeReport(out io.Writer, path string) error {
	reportMu.Lock()
	defer reportMu.Unlock()
	if len(rows) == 0 {
		return nil
	}
	var b strings.Builder
	b.WriteString("| scenario | faults injected | updates intended | landed | duplicated | notifications intended | delivered | duplicated | time | result |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|\n")
	for i := range rows {
		r := &rows[i]
		fmt.Fprintf(&b, "| %s | %s | %d | %d | %d | %d | %d | %d | %s | %s |\n", r.scenario, r.faults,
			r.updIntended, r.updLanded, r.updDup, r.notIntended, r.notDelivered, r.notDup, r.took.Round(time.Second), r.result)
	}
	for _, n := range notes {
		b.WriteString("\n" + n + "\n")
	}
	fmt.Fprintf(out, "\nFault table:\n\n%s\n", b.String())
	if path == "" {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, []byte(b.String()), 0o644)
}

// settleTimeout bounds how long a scenario may take to recover after its
// faults ended.
const settleTimeout = 150 * time.Second

// quietPeriod is how long the test keeps watching after everything
// arrived, for late duplicates (the outbox rescans its store every 5s).
const quietPeriod = 6 * time.Second

// finish waits until every update landed, every notification arrived and
// the outbox holds nothing pending (or settleTimeout passes), then keeps
// watching for quietPeriod, measures, checks that the running replicas are
// ready, records the row and fails the test on any loss or duplicate
// beyond dupBound notifications.
func finish(t *testing.T, w *world, start time.Time, scenario string, faults func() string, dupBound int, replicas ...*daemon) tally {
	t.Helper()
	settled := poll(t.Context(), settleTimeout, func() bool {
		return w.measure(t).done() && w.pendingDeliveries(t) == 0
	})
	time.Sleep(quietPeriod)
	tl := w.measure(t)
	r := row{scenario: scenario, faults: faults(), tally: tl, took: time.Since(start), result: "pass"}
	fail := func(format string, args ...any) {
		t.Errorf(format, args...)
		r.result = "FAIL"
	}
	if !settled {
		fail("%s: not settled after %s: %d/%d updates, %d/%d notifications, %d deliveries pending",
			scenario, settleTimeout, tl.updLanded, tl.updIntended, tl.notDelivered, tl.notIntended, w.pendingDeliveries(t))
	}
	if len(tl.missing) > 0 {
		fail("%s: lost: %s", scenario, strings.Join(tl.missing, "; "))
	}
	if tl.updDup > 0 {
		fail("%s: duplicate writes: %s", scenario, strings.Join(tl.dups, "; "))
	}
	if tl.notTwice > 0 {
		fail("%s: %d notifications announced again under a new delivery ID (not a resend of one delivery): %s", scenario, tl.notTwice, strings.Join(tl.dups, "; "))
	}
	if tl.notDup > dupBound {
		fail("%s: %d duplicate notifications, bound %d: %s", scenario, tl.notDup, dupBound, strings.Join(tl.dups, "; "))
	} else if tl.notDup > 0 {
		t.Logf("%s: %d duplicate notifications (bound %d): %s", scenario, tl.notDup, dupBound, strings.Join(tl.dups, "; "))
	}
	if tl.notDup > 0 {
		// What the outbox said about it: failed saves of a delivery's
		// state, and deliveries picked up again from the store.
		for _, d := range replicas {
			for _, l := range d.logLines() {
				if containsAll(l.text, []string{"delivery"}) && (strings.Contains(l.text, `"level":"ERROR"`) || strings.Contains(l.text, "picked up")) {
					t.Logf("%s [run %d] %s", d.name, l.run, l.text)
				}
			}
		}
	}
	if dead := w.deadDeliveries(t); len(dead) > 0 {
		fail("%s: %d deliveries dead-lettered, first: %s: %s", scenario, len(dead), dead[0].App, dead[0].LastError)
	}
	for _, d := range replicas {
		if d.running() && !d.ready(t.Context()) {
			fail("%s: %s /readyz is not 200 after the scenario", scenario, d.name)
		}
	}
	t.Logf("%s: faults: %s; updates %d/%d landed, %d duplicated; notifications %d/%d delivered, %d duplicated; %s",
		scenario, r.faults, tl.updLanded, tl.updIntended, tl.updDup, tl.notDelivered, tl.notIntended, tl.notDup, r.took.Round(time.Second))
	record(r)
	return tl
}
