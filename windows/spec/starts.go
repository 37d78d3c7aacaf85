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

// Zone offsets are whole seconds, so the stretches of one offset start and
// end on whole seconds.
const (
	minInstant = math.MinInt64 / 4
	maxInstant = math.MaxInt64 / 4
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

// wall returns what the clock on the wall in the schedule's zone reads at t,
// as a zone-free time (a UTC time with the same fields), and the span of
// instants that share t's offset.
func (s *Schedule) wall(t time.Time) (time.Time, span) {
	sp := s.spanAt(t.Unix())
	return time.Unix(t.Unix()+sp.off, int64(t.Nanosecond())).UTC(), sp
}

// ceilMinuteOf returns the first wall minute at or after w.
func ceilMinuteOf(w time.Time) int64 {
	sec := w.Unix()
	if w.Nanosecond() > 0 {
		sec++
	}
	return ceilMinute(sec)
}

// civilTime returns wall minute m as a time in loc (for display: a wall
// time skipped by a DST jump comes out as Go's time.Date normalises it).
func civilTime(m int64, loc *time.Location) time.Time {
	day := floorDiv(m, minutesPerDay)
	mod := int(m - day*minutesPerDay)
	y, mo, d := civilFromDays(day)
	return time.Date(y, time.Month(mo), d, mod/60, mod%60, 0, 0, loc)
}

// Next returns the first start whose wall-clock time is at or after the
// wall-clock reading of t, or false if there is none within Horizon.
func (s *Schedule) Next(t time.Time) (time.Time, bool) {
	w, _ := s.wall(t)
	from := ceilMinuteOf(w)
	m, ok := s.nextCivil(from, from+int64(Horizon/time.Minute))
	if !ok {
		return time.Time{}, false
	}
	return civilTime(m, s.loc), true
}

// Prev returns the last start whose wall-clock time is at or before the
// wall-clock reading of t, or false if there is none within Horizon.
func (s *Schedule) Prev(t time.Time) (time.Time, bool) {
	w, _ := s.wall(t)
	to := floorDiv(w.Unix(), 60) + 1
	m, ok := s.prevCivil(to-int64(Horizon/time.Minute), to)
	if !ok {
		return time.Time{}, false
	}
	return civilTime(m, s.loc), true
}
