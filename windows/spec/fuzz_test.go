package spec

import (
	"strings"
	"testing"
	"time"
)

// FuzzSchedule feeds arbitrary window specs through parsing and evaluation.
// Whatever parses must evaluate without panicking, and the boundaries it
// reports must be real: closed just before an open, open just before a close.
func FuzzSchedule(f *testing.F) {
	for _, seed := range []struct {
		schedule string
		minutes  int64
		zone     string
	}{
		{"0 22 * * *", 60, "Europe/Berlin"}, {"30 2 * * 7", 90, "America/New_York"},
		{"*/15 1-3 * * *", 20, "Australia/Lord_Howe"}, {"@daily", 1440 * 3, "Asia/Kathmandu"},
		{"0 0 29 2 *", 60, "UTC"}, {"0 0 30 2 *", 60, ""}, {"TZ=x", 1, "Local"},
		{"* * * * *", 120, "America/Santiago"}, {"0 12 30 12 *", 60, "Pacific/Apia"},
		{"1-7/2 0 ? * 5-7/3", 5, "Europe/Berlin"}, {"@every 1h", 60, "UTC"},
	} {
		f.Add(seed.schedule, seed.minutes, seed.zone)
	}
	at := []time.Time{
		time.Date(2026, 3, 29, 0, 30, 0, 0, time.UTC),
		time.Date(2026, 10, 4, 15, 59, 59, 999, time.UTC),
		time.Date(2099, 12, 31, 23, 0, 0, 0, time.UTC),
	}
	f.Fuzz(func(t *testing.T, schedule string, minutes int64, zone string) {
		loc, err := LoadZone(zone)
		if err != nil {
			return
		}
		s, err := Parse(schedule, loc)
		if err != nil {
			if strings.TrimSpace(err.Error()) == "" {
				t.Fatal("empty error")
			}
			return
		}
		// Up to a year; evaluation cost grows with the duration.
		d := time.Duration(minutes%(366*1440)) * time.Minute
		if d <= 0 {
			d = time.Minute
		}
		for _, now := range at {
			if o, ok := s.NextOpen(now, d); ok {
				if !o.After(now) || !s.Active(o, d) || s.Active(o.Add(-time.Nanosecond), d) {
					t.Fatalf("%q %s in %s at %s: NextOpen %s is not an opening", schedule, d, loc, now, o)
				}
			}
			if c, ok := s.NextClose(now, d); ok {
				if !c.After(now) || s.Active(c, d) || !s.Active(c.Add(-time.Nanosecond), d) {
					t.Fatalf("%q %s in %s at %s: NextClose %s is not a closing", schedule, d, loc, now, c)
				}
			}
		}
	})
}

// FuzzGlob checks that any pattern either fails to compile or matches
// without panicking, and that a pattern free of special characters matches
// exactly itself.
func FuzzGlob(f *testing.F) {
	for _, seed := range [][2]string{
		{"prod-*", "prod-shop"}, {"{a,b}[!c-e]?*", "axyz"}, {`\{x`, "{x"}, {"[]a]", "]"},
		{"a{b,{c,d}e}f", "adef"}, {"*/*", "https://x/y"}, {"exact", "exact"},
	} {
		f.Add(seed[0], seed[1])
	}
	f.Fuzz(func(t *testing.T, pattern, s string) {
		g, err := CompileGlob(pattern)
		if err != nil {
			return
		}
		g.Match(s)
		if !strings.ContainsAny(pattern, `*?[]{}\,!^`) && g.Match(s) != (pattern == s) {
			t.Fatalf("literal pattern %q vs %q: match %v", pattern, s, g.Match(s))
		}
	})
}
