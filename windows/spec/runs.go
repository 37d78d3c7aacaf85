package spec

import "time"

// Evaluation follows Argo CD (v3.6.1 SyncWindows): a window is active at t
// when the wall clock of its zone at t, w, lies strictly inside (s, s+d) for
// a start s, where starts and w are both read as wall-clock times and d is
// added on the wall clock. The union of those open intervals, U, is cut by
// DST jumps only through w: the state can change where w crosses a
// boundary of U, or where the offset changes.

// openStart returns the latest start s (a wall minute) with w-d < s < w,
// which makes the window active at wall time w.
func (s *Schedule) openStart(w time.Time, d time.Duration) (int64, bool) {
	if d <= 0 {
		return 0, false
	}
	from := floorDiv(w.Add(-d).Unix(), 60)
	m, ok := s.prevCivil(from, ceilMinuteOf(w))
	if !ok || !time.Unix(m*60, 0).Add(d).After(w) {
		return 0, false
	}
	return m, true
}

// LastStart returns the start that makes a window of duration d active at
// t (its wall-clock time in the zone), or false if the window is closed.
func (s *Schedule) LastStart(t time.Time, d time.Duration) (time.Time, bool) {
	w, _ := s.wall(t)
	m, ok := s.openStart(w, d)
	if !ok {
		return time.Time{}, false
	}
	return civilTime(m, s.loc), true
}

// Active reports whether a window of duration d is open at t.
func (s *Schedule) Active(t time.Time, d time.Duration) bool {
	w, _ := s.wall(t)
	_, ok := s.openStart(w, d)
	return ok
}

// NextOpen returns the first instant after t at which a window of duration
// d is open having been closed: if it is open at t, the first reopening
// after the current run closes. A window opens just after its start (it is
// closed at the start itself), so this is the start plus a nanosecond, or
// the instant of a DST jump into the window. False if not within Horizon.
func (s *Schedule) NextOpen(t time.Time, d time.Duration) (time.Time, bool) {
	if d <= 0 {
		return time.Time{}, false
	}
	limit := t.Add(Horizon)
	if s.Active(t, d) {
		c, ok := s.flip(t, d, false, limit)
		if !ok {
			return time.Time{}, false
		}
		t = c
	}
	return s.flip(t, d, true, limit)
}

// NextClose returns the first instant after t at which a window of
// duration d is closed: the end of the current run if it is open at t, or
// of the next run if it is closed. False if not within Horizon (for example
// a window that is always open, such as hourly for 2h).
func (s *Schedule) NextClose(t time.Time, d time.Duration) (time.Time, bool) {
	if d <= 0 {
		return time.Time{}, false
	}
	limit := t.Add(Horizon)
	if !s.Active(t, d) {
		o, ok := s.flip(t, d, true, limit)
		if !ok {
			return time.Time{}, false
		}
		t = o
	}
	return s.flip(t, d, false, limit)
}

// flip returns the first instant after t at which Active is want, given
// that it is not want at t, searching up to limit.
func (s *Schedule) flip(t time.Time, d time.Duration, want bool, limit time.Time) (time.Time, bool) {
	cur, atJump := t, false
	for cur.Before(limit) {
		w, sp := s.wall(cur)
		_, open := s.openStart(w, d)
		if atJump && open == want {
			return cur.In(s.loc), true
		}
		off := time.Duration(sp.off) * time.Second
		end := limit
		if sp.end < limit.Unix() {
			end = time.Unix(sp.end, 0)
		}
		if !end.After(cur) {
			// time.ZoneBounds can report a bound at or before cur for
			// far-future instants read through a zone's rule; step on.
			end = time.Unix(cur.Unix()+1, 0)
		}
		endWall := end.Add(off)
		if want {
			// Closed at w: the next start at or after w opens it just after.
			if m, ok := s.nextCivil(ceilMinuteOf(w), ceilMinuteOf(endWall)); ok {
				if u := time.Unix(m*60, 0).Add(-off + time.Nanosecond); u.Before(end) {
					return u.In(s.loc), true
				}
			}
		} else if m, ok := s.openStart(w, d); ok {
			// Open at w: it closes when the wall clock reaches the end of the run.
			if e, ok := s.runEnd(m, d, endWall); ok {
				return e.Add(-off).In(s.loc), true
			}
		}
		cur, atJump = end, true
	}
	return time.Time{}, false
}

// runEnd returns the wall time at which the run holding start m closes:
// the first s+d with no start strictly inside (s, s+d) after s. A start at
// exactly s+d does not continue the run (the window is closed at that
// instant). False if the run reaches beyond limit.
func (s *Schedule) runEnd(m int64, d time.Duration, limit time.Time) (time.Time, bool) {
	skipDay := s.maxGap > 0 && time.Duration(s.maxGap)*time.Minute < d
	for {
		if skipDay {
			// d covers every gap of the day, so the run reaches the day's
			// last start (m is a start, so its day matches).
			day := floorDiv(m, minutesPerDay)
			if last := day*minutesPerDay + int64(s.times[len(s.times)-1]); last > m {
				m = last
			}
		}
		end := time.Unix(m*60, 0).Add(d)
		if !end.Before(limit) {
			return time.Time{}, false
		}
		p, ok := s.prevCivil(m+1, ceilMinuteOf(end))
		if !ok {
			return end, true
		}
		m = p
	}
}
