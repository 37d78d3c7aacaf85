package spec

import (
	"sort"
	"time"
)

// A window with schedule s and duration d is active on the union of
// [start, start+d) over all starts. A run is one maximal stretch of that
// union: it opens at a start not covered by an earlier one and closes when
// no start falls inside the coverage so far.

// LastStart returns the start that makes a window of duration d active at t:
// the latest start s with s <= t < s+d. Only one start needs checking, since
// every start has the same duration.
func (s *Schedule) LastStart(t time.Time, d time.Duration) (time.Time, bool) {
	return s.instant(s.lastStart(t, d))
}

func (s *Schedule) lastStart(t time.Time, d time.Duration) (int64, bool) {
	if d <= 0 {
		return 0, false
	}
	// s > t-d  <=>  s >= floor(t-d)+1, as starts are whole seconds.
	return s.prevStart(t.Unix(), t.Add(-d).Unix()+1)
}

// Active reports whether a window of duration d is open at t.
func (s *Schedule) Active(t time.Time, d time.Duration) bool {
	_, ok := s.lastStart(t, d)
	return ok
}

// NextOpen returns the first instant after t at which a window of duration d
// becomes active: the next start if it is closed at t, or the first start
// after the current run closes if it is open (an instant equal to t is never
// returned). False if that is not within Horizon.
func (s *Schedule) NextOpen(t time.Time, d time.Duration) (time.Time, bool) {
	if d <= 0 {
		return time.Time{}, false
	}
	limit := t.Unix() + horizonSecs
	from := t.Unix() + 1
	if s.Active(t, d) {
		c, ok := s.NextClose(t, d)
		if !ok {
			return time.Time{}, false
		}
		from = ceilSecond(c) // no start at c, or the window would not close
	}
	return s.instant(s.nextStart(from, limit))
}

// NextClose returns the first instant after t at which a window of duration
// d stops being active: the end of the current run if it is open at t, or of
// the next run if it is closed. False if that is not within Horizon (for
// example a window that is always open, such as hourly for 2h).
func (s *Schedule) NextClose(t time.Time, d time.Duration) (time.Time, bool) {
	if d <= 0 {
		return time.Time{}, false
	}
	limit := t.Unix() + horizonSecs
	last, ok := s.lastStart(t, d)
	if !ok {
		if last, ok = s.nextStart(t.Unix()+1, limit); !ok {
			return time.Time{}, false
		}
	}
	for {
		last = s.sameDayRun(last, d)
		end := time.Unix(last, 0).Add(d)
		if end.Unix() >= limit {
			return time.Time{}, false
		}
		// A start at or before end keeps the run going (one at exactly end
		// opens as the previous occurrence closes).
		p, ok := s.prevStart(end.Unix(), last+1)
		if !ok {
			return end.In(s.loc), true
		}
		last = p
	}
}

// sameDayRun skips ahead within one day: if start u is a regular start and
// d covers the longest gap between a day's times, every later start of that
// day keeps the run going, so the run reaches at least the day's last start.
// It only applies while the UTC offset stays the same, so elapsed gaps equal
// wall-clock gaps. Without it an always-open "* * * * *" window would be
// walked minute by minute.
func (s *Schedule) sameDayRun(u int64, d time.Duration) int64 {
	if s.maxGap == 0 || d < time.Duration(s.maxGap)*time.Minute {
		return u
	}
	sp := s.spanAt(u)
	wall := u + sp.off
	if floorMod(wall, 60) != 0 {
		return u
	}
	day := floorDiv(wall, 86400)
	mod := int(floorDiv(wall, 60) - day*minutesPerDay)
	if i := sort.SearchInts(s.times, mod); i == len(s.times) || s.times[i] != mod {
		return u // a start moved by a DST jump, not one of the day's times
	}
	if ok, _ := s.dayMatches(day); !ok {
		return u
	}
	last := day*86400 + int64(s.times[len(s.times)-1])*60 - sp.off
	if last > u && last < sp.end {
		return last
	}
	return u
}
