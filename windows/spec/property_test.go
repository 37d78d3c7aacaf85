package spec

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/robfig/cron/v3"
)

// The property test checks Active against an oracle that knows nothing of
// spans or civil search: Argo CD's formula with robfig/cron, read on the
// zone's wall clock (next start after w-d is before w), and checks that
// NextOpen and NextClose are where Active changes, with no change sampled
// in between.

var propertyZones = []string{
	"UTC", "Europe/Berlin", "America/New_York", "Australia/Lord_Howe", // 30-minute DST shift
	"Asia/Kathmandu",   // +05:45
	"America/Santiago", // DST changes at midnight
}

var (
	minuteFields = []string{"0", "30", "*/15", "5,35", "45", "*", "0-10", "59"}
	hourFields   = []string{"*", "2", "1-3", "0", "23", "*/6", "9-17", "1", "2,14"}
	domFields    = []string{"*", "*", "*", "1", "15", "28-31", "*/10", "31"}
	monthFields  = []string{"*", "*", "*", "3", "10,11", "*/2", "4-9"}
	dowFields    = []string{"*", "*", "*", "0", "1-5", "6,7", "sun", "5-7"}
	descriptorsT = []string{"@daily", "@hourly", "@weekly", "@monthly", "@yearly"}
	durations    = []time.Duration{
		30 * time.Second, 90 * time.Second, 7 * time.Minute, 30 * time.Minute, 45 * time.Minute, time.Hour,
		90 * time.Minute, 2 * time.Hour, 3 * time.Hour, 5 * time.Hour, 24 * time.Hour, 36 * time.Hour,
		3 * 24 * time.Hour, 7 * 24 * time.Hour, 59*time.Minute + 30*time.Second,
	}
)

const year = 365 * 24 * time.Hour

func TestPropertyAgainstOracle(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	parser := cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)
	for zi, zone := range propertyZones {
		t.Run(zone, func(t *testing.T) {
			t.Parallel()
			loc, err := LoadZone(zone)
			if err != nil {
				t.Fatal(err)
			}
			rng := rand.New(rand.NewPCG(uint64(zi), 7))
			for range 200 {
				text := randomSchedule(rng)
				d := durations[rng.IntN(len(durations))]
				s, err := Parse(text, loc)
				if err != nil {
					t.Fatalf("Parse(%q): %v", text, err)
				}
				oracleText := strings.NewReplacer("5-7", "5-6,0", "6,7", "6,0").Replace(text)
				oracle, err := parser.Parse("TZ=UTC " + oracleText)
				if err != nil {
					t.Fatalf("robfig Parse(%q): %v", oracleText, err)
				}
				for range 20 {
					at := t0.Add(time.Duration(rng.Int64N(int64(2 * year)))).Truncate(time.Duration(1+rng.IntN(2)) * time.Minute)
					if rng.IntN(3) == 0 {
						// around a DST change
						if _, end := at.In(loc).ZoneBounds(); !end.IsZero() {
							at = end.Add(time.Duration(rng.Int64N(int64(4*time.Hour))) - 2*time.Hour).Truncate(time.Minute)
						}
					}
					checkOracle(t, s, oracle, d, at, rng)
				}
			}
		})
	}
}

func randomSchedule(rng *rand.Rand) string {
	if rng.IntN(8) == 0 {
		return descriptorsT[rng.IntN(len(descriptorsT))]
	}
	pick := func(f []string) string { return f[rng.IntN(len(f))] }
	return fmt.Sprintf("%s %s %s %s %s", pick(minuteFields), pick(hourFields), pick(domFields), pick(monthFields), pick(dowFields))
}

func checkOracle(t *testing.T, s *Schedule, oracle cron.Schedule, d time.Duration, at time.Time, rng *rand.Rand) {
	t.Helper()
	want := func(u time.Time) bool {
		_, off := u.In(s.loc).Zone()
		w := time.Unix(u.Unix()+int64(off), int64(u.Nanosecond())).UTC()
		next := oracle.Next(w.Add(-d))
		return !next.IsZero() && next.Before(w)
	}
	for _, u := range []time.Time{at, at.Add(-time.Second), at.Add(time.Nanosecond)} {
		if got := s.Active(u, d); got != want(u) {
			t.Fatalf("%q for %s: Active(%s) = %v, oracle %v", s, d, u.Format(time.RFC3339Nano), got, want(u))
		}
	}
	open := s.Active(at, d)
	check := func(name string, b time.Time, ok bool, state bool) {
		if !ok {
			return // beyond Horizon: always open or never closing
		}
		if !b.After(at) || want(b) != state || want(b.Add(-time.Nanosecond)) == state && b.Add(-time.Nanosecond).After(at) && (name != "NextOpen" || !open) {
			t.Fatalf("%q for %s at %s: %s = %s is not a change to %v", s, d, at.Format(time.RFC3339), name, b.Format(time.RFC3339Nano), state)
		}
		if name == "NextClose" && open || name == "NextOpen" && !open {
			for range 10 { // no change sampled before the boundary
				u := at.Add(time.Duration(rng.Int64N(int64(b.Sub(at)))))
				if u.After(at) && want(u) != open && u.Nanosecond() != 0 {
					t.Fatalf("%q for %s at %s: %s = %s, but Active is %v at %s", s, d, at.Format(time.RFC3339), name, b.Format(time.RFC3339Nano), !open, u.Format(time.RFC3339Nano))
				}
			}
		}
	}
	o, ok := s.NextOpen(at, d)
	check("NextOpen", o, ok, true)
	c, ok := s.NextClose(at, d)
	check("NextClose", c, ok, false)
}
