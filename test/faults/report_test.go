package faults

import (
	"cmp"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/crowsnest-dev/crowsnest/internal/testwait"
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

// writeReport prints the tables (Markdown) to out and, when path is set,
// to that file too: the fault table, then the hostile-input table.
func writeReport(out io.Writer, path string) error {
	reportMu.Lock()
	defer reportMu.Unlock()
	if len(rows) == 0 && len(hostileRows) == 0 {
		return nil
	}
	var b strings.Builder
	if len(rows) > 0 {
		var f strings.Builder
		f.WriteString("| scenario | faults injected | updates intended | landed | duplicated | notifications intended | delivered | duplicated | time | result |\n")
		f.WriteString("|---|---|---|---|---|---|---|---|---|---|\n")
		for i := range rows {
			r := &rows[i]
			fmt.Fprintf(&f, "| %s | %s | %d | %d | %d | %d | %d | %d | %s | %s |\n", r.scenario, r.faults,
				r.updIntended, r.updLanded, r.updDup, r.notIntended, r.notDelivered, r.notDup, r.took.Round(time.Second), r.result)
		}
		for _, n := range notes {
			f.WriteString("\n" + n + "\n")
		}
		fmt.Fprintf(out, "\nFault table:\n\n%s\n", f.String())
		b.WriteString(f.String())
	}
	if len(hostileRows) > 0 {
		h := hostileTable()
		fmt.Fprintf(out, "\nHostile-input table:\n\n%s\n", h)
		if b.Len() > 0 {
			b.WriteString("\n")
		}
		b.WriteString("## Hostile input\n\n" + h)
	}
	if path == "" {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, []byte(b.String()), 0o644)
}

// hostileRow is one line of the hostile-input table: an attack, what
// crowsnest answered, and what the row measured of secrets leaked,
// intended work lost and results credited to another Application (-1
// where the row has nothing of the kind to measure).
type hostileRow struct {
	attack, tried, answer string
	leaked, lost, wrong   int
	took                  time.Duration
	result                string
}

// hostileRows are the hostile-input table's lines, in any order.
var hostileRows []hostileRow

func recordHostile(r hostileRow) {
	reportMu.Lock()
	defer reportMu.Unlock()
	hostileRows = append(hostileRows, r)
}

// hostileGroups orders the hostile-input table by the start of each
// attack's name, as the issue lists them; rows come from parallel tests.
var hostileGroups = []string{
	"credential exfiltration", "SSRF", "wrong Application", "secrets in output", "--once honesty",
	"registry webhook", "path escape", "template limits", "registry:", "limits:",
}

// hostileTable is the hostile-input table, in hostileGroups order, then
// by attack. The caller holds reportMu.
func hostileTable() string {
	group := func(attack string) int {
		for i, g := range hostileGroups {
			if strings.HasPrefix(attack, g) {
				return i
			}
		}
		return len(hostileGroups)
	}
	sorted := slices.Clone(hostileRows)
	slices.SortStableFunc(sorted, func(a, b hostileRow) int {
		return cmp.Or(cmp.Compare(group(a.attack), group(b.attack)), strings.Compare(a.attack, b.attack))
	})
	cell := func(s string) string { return strings.ReplaceAll(strings.ReplaceAll(s, "|", "\\|"), "\n", " ") }
	var b strings.Builder
	b.WriteString("| attack | what was tried | crowsnest's answer | leaked | lost | credited to the wrong Application | time | result |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|\n")
	for _, r := range sorted {
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s | %s |\n", cell(r.attack), cell(r.tried), cell(r.answer),
			measured(r.leaked), measured(r.lost), measured(r.wrong), r.took.Round(100*time.Millisecond), r.result)
	}
	b.WriteString("\nleaked: secrets, internal services' answers (or requests reaching them) and files found where they must not be; " +
		"lost: intended results that did not happen or failures not reported; credited to the wrong Application: results, Events " +
		"and notifications that went to another Application; -: nothing of the kind for that row to measure.\n")
	return b.String()
}

// measured shows a count, or "-" for one the row does not measure.
func measured(n int) string {
	if n < 0 {
		return "-"
	}
	return strconv.Itoa(n)
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
	settled := testwait.Until(t.Context(), settleTimeout, func() bool {
		return w.measure(t).done() && w.pendingDeliveries(t) == 0
	})
	time.Sleep(quietPeriod) // sleep-ok: the fault table's quiet period: late duplicates after settling are counted in the report
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
