package spec

import "sort"

// Civil (zone-free) calendar arithmetic. A wall-clock minute is counted as
// minutes since 1970-01-01 00:00 as it reads on the clock; a civil day as
// days since then. Zones only come in when wall minutes are mapped to
// instants (starts.go).

const minutesPerDay = 24 * 60

// daysFromCivil returns the day number of y-m-d (proleptic Gregorian).
func daysFromCivil(y, m, d int) int64 {
	if m <= 2 {
		y--
	}
	era := floorDiv(int64(y), 400)
	yoe := int64(y) - era*400
	mp := int64((m + 9) % 12)
	doy := (153*mp+2)/5 + int64(d) - 1
	doe := yoe*365 + yoe/4 - yoe/100 + doy
	return era*146097 + doe - 719468
}

// civilFromDays is the inverse of daysFromCivil.
func civilFromDays(z int64) (y, m, d int) {
	z += 719468
	era := floorDiv(z, 146097)
	doe := z - era*146097
	yoe := (doe - doe/1460 + doe/36524 - doe/146096) / 365
	doy := doe - (365*yoe + yoe/4 - yoe/100)
	mp := (5*doy + 2) / 153
	d = int(doy - (153*mp+2)/5 + 1)
	m = int(mp + 3)
	if m > 12 {
		m -= 12
	}
	y = int(yoe + era*400)
	if m <= 2 {
		y++
	}
	return y, m, d
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}

// ceilMinute converts wall seconds to the first wall minute at or after them.
func ceilMinute(sec int64) int64 { return -floorDiv(-sec, 60) }

// dayMatches applies cron's month, day-of-month and day-of-week fields.
// skip is how many days after day the next candidate can be at the earliest
// (the rest of the month when the month does not match), for forward scans.
func (s *Schedule) dayMatches(day int64) (ok bool, skip int64) {
	y, m, d := civilFromDays(day)
	if s.month&(1<<m) == 0 {
		if m == 12 {
			return false, daysFromCivil(y+1, 1, 1) - day
		}
		return false, daysFromCivil(y, m+1, 1) - day
	}
	domOK := s.dom&(1<<d) != 0
	dowOK := s.dow&(1<<floorMod(day+4, 7)) != 0 // 1970-01-01 was a Thursday
	if s.domStar || s.dowStar {
		return domOK && dowOK, 1
	}
	return domOK || dowOK, 1
}

func floorMod(a, b int64) int64 { return a - floorDiv(a, b)*b }

// nextCivil returns the first matching wall minute in [from, to).
func (s *Schedule) nextCivil(from, to int64) (int64, bool) {
	day := floorDiv(from, minutesPerDay)
	mod := int(from - day*minutesPerDay)
	for day*minutesPerDay < to {
		ok, skip := s.dayMatches(day)
		if ok {
			i := sort.SearchInts(s.times, mod)
			if i < len(s.times) {
				w := day*minutesPerDay + int64(s.times[i])
				return w, w < to
			}
		}
		day += skip
		mod = 0
	}
	return 0, false
}

// prevCivil returns the last matching wall minute in [from, to).
func (s *Schedule) prevCivil(from, to int64) (int64, bool) {
	if to <= from {
		return 0, false
	}
	last := to - 1
	day := floorDiv(last, minutesPerDay)
	mod := int(last - day*minutesPerDay)
	for (day+1)*minutesPerDay > from {
		if ok, _ := s.dayMatches(day); ok {
			// Last time <= mod.
			i := sort.SearchInts(s.times, mod+1) - 1
			if i >= 0 {
				w := day*minutesPerDay + int64(s.times[i])
				return w, w >= from
			}
		}
		day--
		mod = minutesPerDay - 1
	}
	return 0, false
}
