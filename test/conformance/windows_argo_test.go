package conformance

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	argo "github.com/argoproj/argo-cd/v3/pkg/apis/application/v1alpha1"
)

// Argo CD's SyncWindows read the clock themselves: Active, InactiveAllows
// and CanSync evaluate at time.Now() and shift the schedule by the zone
// offset at time.Now(). The one exported path that takes an instant is
// CanSync's operationStartTime: when a deny window with syncOverrun is
// active now, CanSync answers canSyncAtTime(isManual, operationStartTime),
// the full decision table at that instant. argoAt takes that path:
//
//   - a sentinel deny window (syncOverrun, no manualSync) that is active at
//     the real time.Now() and not at the evaluated instant makes CanSync
//     take the overrun branch; every window under test gets syncOverrun so
//     the branch is not refused;
//   - each window's timeZone is replaced by a fixed-offset zone with the
//     offset the real zone has at the evaluated instant, so the offset
//     Argo CD reads at time.Now() is the one a running Argo CD would read
//     at that instant. The fixed zones are TZif files in a temporary
//     ZONEINFO folder (Go reads ZONEINFO before the system zones).

var (
	zoneDirOnce sync.Once
	zoneDirErr  error
)

// setupFixedZones points ZONEINFO at a folder of fixed-offset zones. It
// must run before anything in the test binary loads a zone.
func setupFixedZones() error {
	dir, err := os.MkdirTemp("", "crowsnest-zones")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Join(dir, "Fixed"), 0o755); err != nil {
		return err
	}
	return os.Setenv("ZONEINFO", dir)
}

// fixedZone returns the name of a zone whose offset is always off seconds,
// writing its TZif file on first use.
func fixedZone(off int) (string, error) {
	name := fmt.Sprintf("Fixed/O%+d", off)
	path := filepath.Join(os.Getenv("ZONEINFO"), name)
	fixedMu.Lock()
	defer fixedMu.Unlock()
	if fixedDone[off] {
		return name, nil
	}
	// TZif version 1: header, no transitions, one local time type.
	b := []byte("TZif")
	b = append(b, make([]byte, 16)...)
	for _, n := range []uint32{0, 0, 0, 0, 1, 4} { // isut, isstd, leap, time, type, char
		b = binary.BigEndian.AppendUint32(b, n)
	}
	b = binary.BigEndian.AppendUint32(b, uint32(int32(off)))
	b = append(b, 0, 0)
	b = append(b, "FIX\x00"...)
	if err := os.WriteFile(path, b, 0o644); err != nil {
		return "", err
	}
	fixedDone[off] = true
	return name, nil
}

var (
	fixedMu   sync.Mutex
	fixedDone = map[int]bool{}
)

func TestMain(m *testing.M) {
	if err := setupFixedZones(); err != nil {
		fmt.Fprintln(os.Stderr, "conformance: fixed zones:", err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(os.Getenv("ZONEINFO"))
	os.Exit(code)
}

// sentinelSlot is the annual stretch (UTC) in which the sentinel window is
// active: it starts a minute before the real now and lasts an hour.
func sentinel(now time.Time) (*argo.InlineSyncWindow, func(time.Time) bool) {
	s := now.UTC().Add(-time.Minute).Truncate(time.Minute)
	w := &argo.InlineSyncWindow{Kind: "deny", Duration: "1h", Applications: []string{"*"}, SyncOverrun: true,
		Schedule: fmt.Sprintf("%d %d %d %d *", s.Minute(), s.Hour(), s.Day(), int(s.Month()))}
	hits := func(t time.Time) bool {
		t = t.UTC()
		for _, y := range []int{t.Year() - 1, t.Year()} {
			start := time.Date(y, s.Month(), s.Day(), s.Hour(), s.Minute(), 0, 0, time.UTC)
			if start.Month() == s.Month() && !t.Before(start.Add(-2*time.Hour)) && t.Before(start.Add(3*time.Hour)) {
				return true
			}
		}
		return false
	}
	return w, hits
}

// errSentinelSlot says an instant falls where the sentinel would be active;
// generators avoid such instants.
var errSentinelSlot = fmt.Errorf("instant in the sentinel's slot")

// argoAt runs Argo CD's CanSync on windows (already matched to the
// Application, as Argo CD's controller does) as it would answer at t.
// zones are the real zones of the windows (their TimeZone field).
func argoAt(windows argo.SyncWindows, t time.Time, manual bool) (bool, error) {
	sent, hits := sentinel(time.Now())
	if hits(t) {
		return false, errSentinelSlot
	}
	ws := make(argo.SyncWindows, 0, len(windows)+1)
	for _, w := range windows {
		c := *w
		c.SyncOverrun = true
		if loc, err := time.LoadLocation(c.TimeZone); err == nil {
			_, off := t.In(loc).Zone()
			if c.TimeZone, err = fixedZone(off); err != nil {
				return false, err
			}
		}
		ws = append(ws, &c)
	}
	ws = append(ws, sent)
	start := t
	return ws.CanSync(manual, &start)
}

// argoActive is whether Argo CD finds window w active at t: alone in a set,
// an active deny window refuses a sync and an active allow window allows
// it. Only allow and deny windows are asked.
func argoActive(w *argo.InlineSyncWindow, t time.Time) (bool, error) {
	ok, err := argoAt(argo.SyncWindows{w}, t, false)
	if err != nil {
		return false, err
	}
	if w.Kind == "deny" {
		return !ok, nil
	}
	return ok, nil
}
