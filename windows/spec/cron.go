package spec

import (
	"errors"
	"fmt"
	"math/bits"
	"strconv"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
)

// ErrNeverFires is returned for a schedule whose fields can never all match,
// such as "0 0 30 2 *" (February 30th). Argo CD treats such a window as
// always active; crowsnest refuses it.
var ErrNeverFires = errors.New("schedule can never fire")

// Schedule is a parsed cron schedule in a time zone. It is immutable and safe
// for concurrent use.
type Schedule struct {
	text string
	loc  *time.Location
	// Bit masks as robfig/cron builds them (bit n set = value n matches).
	minute, hour, dom, month, dow uint64
	// domStar/dowStar: the field was "*" or "?", which makes cron AND the
	// two day fields instead of OR-ing them.
	domStar, dowStar bool
	// times lists the matching minutes of a day (hour*60+minute), ascending.
	times []int
	// maxGap is the longest distance between consecutive times of one day,
	// in minutes (0 with a single time).
	maxGap int
}

// cron's day-field rule: if either day field is unrestricted ("*"), both
// must match; otherwise either may.
const starBit = 1 << 63

var cronParser = cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// descriptors are the @-forms accepted; @every is not, since it counts from
// whenever a process started, not from the wall clock.
var descriptors = map[string]bool{
	"@yearly": true, "@annually": true, "@monthly": true, "@weekly": true,
	"@daily": true, "@midnight": true, "@hourly": true,
}

// Parse reads a 5-field cron schedule (or a descriptor such as @daily) whose
// wall-clock times are in loc (UTC when nil). The zone comes from the
// window's timeZone field, so TZ= and CRON_TZ= prefixes are refused.
func Parse(schedule string, loc *time.Location) (*Schedule, error) {
	if loc == nil {
		loc = time.UTC
	}
	text := strings.TrimSpace(schedule)
	switch {
	case text == "":
		return nil, errors.New("empty schedule")
	case strings.HasPrefix(text, "TZ=") || strings.HasPrefix(text, "CRON_TZ="):
		return nil, fmt.Errorf("invalid schedule %q: set the zone in timeZone, not in the schedule", schedule)
	case strings.HasPrefix(text, "@"):
		if !descriptors[text] {
			return nil, fmt.Errorf("invalid schedule %q: want 5 cron fields or one of @yearly, @monthly, @weekly, @daily, @hourly", schedule)
		}
	default:
		fields := strings.Fields(text)
		if len(fields) != 5 {
			return nil, fmt.Errorf("invalid schedule %q: want 5 fields (minute hour day-of-month month day-of-week), got %d", schedule, len(fields))
		}
		fields[4] = sundayAsSeven(fields[4])
		text = strings.Join(fields, " ")
	}
	parsed, err := cronParser.Parse(text)
	if err != nil {
		return nil, fmt.Errorf("invalid schedule %q: %w", schedule, err)
	}
	ss, ok := parsed.(*cron.SpecSchedule)
	if !ok {
		return nil, fmt.Errorf("invalid schedule %q: unsupported form", schedule)
	}
	s := &Schedule{
		text: strings.TrimSpace(schedule), loc: loc,
		minute: ss.Minute &^ starBit, hour: ss.Hour &^ starBit,
		dom: ss.Dom &^ starBit, month: ss.Month &^ starBit, dow: ss.Dow &^ starBit,
		domStar: ss.Dom&starBit != 0, dowStar: ss.Dow&starBit != 0,
	}
	if !s.canFire() {
		return nil, fmt.Errorf("invalid schedule %q: %w (no month has such a day)", schedule, ErrNeverFires)
	}
	for h := range 24 {
		for m := range 60 {
			if s.hour&(1<<h) != 0 && s.minute&(1<<m) != 0 {
				s.times = append(s.times, h*60+m)
			}
		}
	}
	for i := 1; i < len(s.times); i++ {
		s.maxGap = max(s.maxGap, s.times[i]-s.times[i-1])
	}
	return s, nil
}

// String returns the schedule as written.
func (s *Schedule) String() string { return s.text }

// Location returns the zone the schedule's wall-clock times are in.
func (s *Schedule) Location() *time.Location { return s.loc }

// daysIn is the most days each month (1-12) can have.
var daysIn = [13]int{0, 31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31}

// canFire reports whether some calendar day matches. Every month holds every
// weekday, so only a day-of-month restricted alone can make it impossible.
func (s *Schedule) canFire() bool {
	if s.minute == 0 || s.hour == 0 || s.month == 0 || s.dom == 0 || s.dow == 0 {
		return false
	}
	if !s.dowStar || s.domStar {
		return true // the weekday field alone can match (OR), or every day can
	}
	for m := 1; m <= 12; m++ {
		if s.month&(1<<m) != 0 && bits.TrailingZeros64(s.dom) <= daysIn[m] {
			return true
		}
	}
	return false
}

// sundayAsSeven rewrites a day-of-week field so 7 means Sunday, as in most
// crons; robfig/cron only knows 0-6. "5-7" becomes "5-6,0", "7" becomes "0".
// Terms it does not understand are left for the cron parser to reject.
func sundayAsSeven(field string) string {
	terms := strings.Split(field, ",")
	for i, term := range terms {
		rng, step, hasStep := strings.Cut(term, "/")
		lo, hi, isRange := strings.Cut(rng, "-")
		if !isRange {
			hi = lo
		}
		a, errA := dowValue(lo)
		b, errB := dowValue(hi)
		if errA != nil || errB != nil || (a != 7 && b != 7) || a > b {
			continue
		}
		if hasStep && !isRange {
			b = 7 // "N/step" means "N-max/step"; max is now 7
		}
		inc := 1
		if hasStep {
			n, err := strconv.Atoi(step)
			if err != nil || n <= 0 {
				continue
			}
			inc = n
		}
		var vals []string
		for v := a; v <= b; v += inc {
			vals = append(vals, strconv.Itoa(v%7))
		}
		terms[i] = strings.Join(vals, ",")
	}
	return strings.Join(terms, ",")
}

var dowNames = map[string]int{"sun": 0, "mon": 1, "tue": 2, "wed": 3, "thu": 4, "fri": 5, "sat": 6}

func dowValue(s string) (int, error) {
	if v, ok := dowNames[strings.ToLower(s)]; ok {
		return v, nil
	}
	v, err := strconv.Atoi(s)
	if err != nil || v < 0 || v > 7 {
		return 0, errors.New("not a weekday")
	}
	return v, nil
}

// LoadZone resolves an IANA time zone name; "" means UTC, as in Argo CD.
// "Local" is refused: a window must mean the same on every machine.
func LoadZone(name string) (*time.Location, error) {
	switch name {
	case "", "UTC":
		return time.UTC, nil
	case "Local":
		return nil, errors.New(`time zone "Local" depends on the machine: name an IANA zone such as Europe/Berlin`)
	}
	loc, err := time.LoadLocation(name)
	if err != nil {
		return nil, fmt.Errorf("unknown time zone %q (want an IANA name such as Europe/Berlin): %w", name, err)
	}
	return loc, nil
}

// appProjectParser reads schedules as Argo CD v3.6.1 reads AppProject
// windows: five fields, no descriptors, weekdays 0-6.
var appProjectParser = cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow)

// CheckAppProjectSchedule returns an error for a schedule Argo CD cannot
// read in an AppProject (it then refuses every sync of the Applications
// the window matches): descriptors such as @daily and weekday 7 are
// crowsnest config extensions that Argo CD rejects.
func CheckAppProjectSchedule(schedule string) error {
	text := strings.TrimSpace(schedule)
	if strings.HasPrefix(text, "@") {
		return fmt.Errorf("invalid schedule %q: Argo CD does not accept descriptors such as @daily in an AppProject; write five fields, e.g. \"0 0 * * *\"", schedule)
	}
	if _, err := appProjectParser.Parse(text); err != nil {
		return fmt.Errorf("invalid schedule %q (as Argo CD reads it; weekdays are 0-6): %w", schedule, err)
	}
	return nil
}
