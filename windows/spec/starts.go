package spec

import (
	"math"
	"time"
)

// Horizon bounds every search for a start or a boundary. Ten years covers
// the longest gap a satisfiable schedule can have (Feb 29 from 2096 to 2104).
const Horizon = 10 * 365 * 24 * time.Hour

// MaxDuration is the longest window duration accepted. A window longer than
// a year is a standing rule rather than a window, and evaluation cost grows
// with the duration.
const MaxDuration = 366 * 24 * time.Hour

// Instants are handled as Unix seconds: every start is a whole second, since
// zone offsets are whole seconds.
const (
	minInstant  = math.MinInt64 / 4
	maxInstant  = math.MaxInt64 / 4
	horizonSecs = int64(Horizon / time.Second)
)

// span is a stretch of time with one UTC offset: instants [start, end) read
// as wall seconds instant+off.
type span struct{ start, end, off int64 }

func (s *Schedule) spanAt(u int64) span {
	t := time.Unix(u, 0).In(s.loc)
	_, off := t.Zone()
	sp := span{start: minInstant, end: maxInstant, off: int64(off)}
	if st, en := t.ZoneBounds(); !st.IsZero() || !en.IsZero() {
		if !st.IsZero() {
			sp.start = st.Unix()
		}
		if !en.IsZero() {
			sp.end = en.Unix()
		}
	}
	return sp
}

// skippedStart reports whether a start falls on sp.start because the clocks
// jumped forward there over a matching wall time.
func (s *Schedule) skippedStart(sp span) bool {
	if sp.start == minInstant {
		return false
	}
	prev := s.spanAt(sp.start - 1).off
	if sp.off <= prev {
		return false
	}
	_, ok := s.nextCivil(ceilMinute(sp.start+prev), ceilMinute(sp.start+sp.off))
	return ok
}

// nextStart returns the first start in [u, limit).
func (s *Schedule) nextStart(u, limit int64) (int64, bool) {
	for u < limit {
		sp := s.spanAt(u)
		if u == sp.start && s.skippedStart(sp) {
			return u, true
		}
		end := min(sp.end, limit)
		if w, ok := s.nextCivil(ceilMinute(u+sp.off), ceilMinute(end+sp.off)); ok {
			return w*60 - sp.off, true
		}
		u = end
	}
	return 0, false
}

// prevStart returns the last start in [lower, u].
func (s *Schedule) prevStart(u, lower int64) (int64, bool) {
	for u >= lower {
		sp := s.spanAt(u)
		begin := max(sp.start, lower)
		if w, ok := s.prevCivil(ceilMinute(begin+sp.off), floorDiv(u+sp.off, 60)+1); ok {
			return w*60 - sp.off, true
		}
		if sp.start < lower {
			return 0, false
		}
		if s.skippedStart(sp) {
			return sp.start, true
		}
		u = sp.start - 1
	}
	return 0, false
}

// Next returns the first start at or after t, or false if there is none
// within Horizon.
func (s *Schedule) Next(t time.Time) (time.Time, bool) {
	u := ceilSecond(t)
	return s.instant(s.nextStart(u, u+horizonSecs))
}

// Prev returns the last start at or before t, or false if there is none
// within Horizon.
func (s *Schedule) Prev(t time.Time) (time.Time, bool) {
	u := t.Unix()
	return s.instant(s.prevStart(u, u-horizonSecs))
}

func (s *Schedule) instant(u int64, ok bool) (time.Time, bool) {
	if !ok {
		return time.Time{}, false
	}
	return time.Unix(u, 0).In(s.loc), true
}

func ceilSecond(t time.Time) int64 {
	if t.Nanosecond() > 0 {
		return t.Unix() + 1
	}
	return t.Unix()
}
