package spec

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// The property test checks Active, NextOpen and NextClose against a
// brute-force evaluator that knows nothing of spans or civil search: it
// walks every minute of a year (plus margins) in the zone, marks the minutes
// whose wall clock matches the cron fields (and, where the clocks jumped
// forward, the instant of the jump if a skipped wall minute matched), then
// merges [start, start+d) intervals into runs.

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

const (
	year       = 365 * 24 * time.Hour
	scanBefore = 10 * 24 * time.Hour // > longest duration, so every run at T0 is seen whole
	scanAfter  = 40 * 24 * time.Hour
	maxTestDur = 9 * 24 * time.Hour
)

func TestPropertyAgainstBruteForce(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	const schedulesPerZone = 24
	for zi, zone := range propertyZones {
		t.Run(zone, func(t *testing.T) {
			t.Parallel()
			loc, err := LoadZone(zone)
			if err != nil {
				t.Fatal(err)
			}
			scan := scanZone(loc, t0.Add(-scanBefore), t0.Add(year+scanAfter))
			rng := rand.New(rand.NewPCG(uint64(zi), 6))
			for range schedulesPerZone {
				text := randomSchedule(rng)
				d := durations[rng.IntN(len(durations))]
				s, err := Parse(text, loc)
				if err != nil {
					t.Fatalf("Parse(%q): %v", text, err)
				}
				checkAgainstBrute(t, s, d, scan, t0, rng)
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

// zoneScan is the brute force's view of a zone: the wall clock of every
// minute from start to end, read with the time package minute by minute.
type zoneScan struct {
	start, end int64 // Unix seconds; minute i is start+60*i
	// byTime[m] lists the minutes whose wall clock reads m (hour*60+minute),
	// so a schedule only looks at the minutes its times can match.
	byTime [minutesPerDay][]int32
	days   []calDay // calendar day of each minute, by index into dayList
	dayOf  []uint16
	// skipped maps a minute to the wall minutes the clocks jumped over
	// just before it.
	skipped map[int32][]skippedWall
}

type calDay struct{ month, day, weekday int }

type skippedWall struct {
	day  calDay
	time int
}

func scanZone(loc *time.Location, from, to time.Time) *zoneScan {
	z := &zoneScan{start: from.Unix(), end: to.Unix(), skipped: map[int32][]skippedWall{}}
	prevWall, prevDay := int64(0), int64(-1<<62)
	for i := int32(0); z.start+60*int64(i) < z.end; i++ {
		u := z.start + 60*int64(i)
		lt := time.Unix(u, 0).In(loc)
		_, off := lt.Zone()
		w := u + int64(off)
		if i > 0 {
			for x := prevWall + 60; x < w; x += 60 {
				st := time.Unix(x, 0).UTC()
				z.skipped[i] = append(z.skipped[i], skippedWall{
					calDay{int(st.Month()), st.Day(), int(st.Weekday())}, st.Hour()*60 + st.Minute()})
			}
		}
		prevWall = w
		if wd := w / 86400; wd != prevDay { // read the date only when it changes
			prevDay = wd
			z.days = append(z.days, calDay{int(lt.Month()), lt.Day(), int(lt.Weekday())})
		}
		z.dayOf = append(z.dayOf, uint16(len(z.days)-1))
		tod := lt.Hour()*60 + lt.Minute()
		z.byTime[tod] = append(z.byTime[tod], i)
	}
	return z
}

func bruteDay(s *Schedule, d calDay) bool {
	if s.month&(1<<d.month) == 0 {
		return false
	}
	domOK, dowOK := s.dom&(1<<d.day) != 0, s.dow&(1<<d.weekday) != 0
	if s.domStar || s.dowStar {
		return domOK && dowOK
	}
	return domOK || dowOK
}

func bruteTime(s *Schedule, tod int) bool {
	return s.hour&(1<<(tod/60)) != 0 && s.minute&(1<<(tod%60)) != 0
}

type run struct{ open, close int64 } // Unix nanoseconds

func bruteRuns(s *Schedule, d time.Duration, z *zoneScan) []run {
	var starts []int32
	for tod := range minutesPerDay {
		if !bruteTime(s, tod) {
			continue
		}
		for _, i := range z.byTime[tod] {
			if bruteDay(s, z.days[z.dayOf[i]]) {
				starts = append(starts, i)
			}
		}
	}
	for i, skipped := range z.skipped {
		for _, sw := range skipped {
			if bruteTime(s, sw.time) && bruteDay(s, sw.day) {
				starts = append(starts, i)
			}
		}
	}
	slices.Sort(starts)
	var runs []run
	for _, i := range starts {
		ns := (z.start + 60*int64(i)) * 1e9
		if n := len(runs); n > 0 && ns <= runs[n-1].close {
			runs[n-1].close = max(runs[n-1].close, ns+int64(d))
			continue
		}
		runs = append(runs, run{ns, ns + int64(d)})
	}
	return runs
}

func checkAgainstBrute(t *testing.T, s *Schedule, d time.Duration, z *zoneScan, t0 time.Time, rng *rand.Rand) {
	t.Helper()
	runs := bruteRuns(s, d, z)
	scanEnd := z.end * 1e9
	known := func(ns int64, ok bool) int64 { // -1: none before the end of the scan
		if !ok || ns >= scanEnd {
			return -1
		}
		return ns
	}
	firstAfter := func(ns int64, field func(run) int64) int64 {
		i := sort.Search(len(runs), func(i int) bool { return field(runs[i]) > ns })
		if i == len(runs) {
			return -1
		}
		return known(field(runs[i]), true)
	}
	samples := []int64{t0.UnixNano()}
	for range 60 {
		samples = append(samples, t0.UnixNano()+rng.Int64N(int64(year)))
	}
	var inYear []run
	for _, r := range runs {
		if r.close > t0.UnixNano() && r.open < t0.Add(year).UnixNano() {
			inYear = append(inYear, r)
		}
	}
	for range min(40, len(inYear)) { // around boundaries, where mistakes hide
		r := inYear[rng.IntN(len(inYear))]
		for _, b := range []int64{r.open, r.close} {
			if b > t0.UnixNano() && b < t0.Add(year).UnixNano() {
				samples = append(samples, b-1e9, b-1, b, b+1e9)
			}
		}
	}
	for _, ns := range samples {
		at := time.Unix(0, ns)
		i := sort.Search(len(runs), func(i int) bool { return runs[i].open > ns }) - 1
		want := evaluation{
			Active:    i >= 0 && ns < runs[i].close,
			NextOpen:  fmtNs(firstAfter(ns, func(r run) int64 { return r.open }), s.loc),
			NextClose: fmtNs(firstAfter(ns, func(r run) int64 { return r.close }), s.loc),
		}
		got := evaluation{Active: s.Active(at, d)}
		o, ok := s.NextOpen(at, d)
		got.NextOpen = fmtNs(known(o.UnixNano(), ok), s.loc)
		c, ok := s.NextClose(at, d)
		got.NextClose = fmtNs(known(c.UnixNano(), ok), s.loc)
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("%q in %s for %s at %s (-brute force +got):\n%s",
				s, s.loc, d, at.In(s.loc).Format(time.RFC3339Nano), diff)
		}
	}
	// Walking the runs with NextOpen/NextClose finds every run of the year.
	var got, want []string
	for _, r := range runs {
		if r.open > t0.UnixNano() && r.open < t0.Add(year).UnixNano() {
			want = append(want, fmtNs(r.open, s.loc)+" - "+fmtNs(known(r.close, true), s.loc))
		}
	}
	for at := t0; ; {
		o, ok := s.NextOpen(at, d)
		if !ok || !o.Before(t0.Add(year)) {
			break
		}
		c, ok := s.NextClose(o, d)
		got = append(got, fmtNs(o.UnixNano(), s.loc)+" - "+fmtNs(known(c.UnixNano(), ok), s.loc))
		if !ok {
			break
		}
		at = c
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("%q in %s for %s: runs of the year (-brute force +got):\n%s", s, s.loc, d, diff)
	}
}

func fmtNs(ns int64, loc *time.Location) string {
	if ns < 0 {
		return "none"
	}
	return time.Unix(0, ns).In(loc).Format("2006-01-02T15:04:05.999999999Z07:00")
}
