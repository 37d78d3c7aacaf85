package render

import (
	"fmt"
	"strconv"
	"text/template"
	"time"
	_ "time/tzdata" // dateInZone's zones must not depend on the image having a zoneinfo folder
)

// timeFuncs are crowsnest's own time helpers; duration is sprig's
// (fromSprig) and durationRound rounds with sprig's. sprig's read the
// process's clock (now, ago, durationRound) and time zone (date and
// toDate use Local), take only a time.Time where Kubernetes gives RFC
// 3339 strings (.app.status.operationState.finishedAt), print the
// current time for a value that is no time, and fall back to UTC for an
// unknown zone. These take a time.Time, an RFC 3339 string or Unix
// seconds; a value that is none formats as "". Layouts are Go's
// (2006-01-02 15:04:05). funcTests' time rows render at a fixed clock.
func timeFuncs(now func() time.Time) template.FuncMap {
	return template.FuncMap{
		// now, ago: sprig's read the process's clock, not the one Compile
		// was given (WithClock; funcTests "now date", "ago").
		"now": now,
		// date and toDate: sprig's use the process's Local zone, and its
		// date prints the current time for an RFC 3339 string (funcTests
		// "now date", "toDate"); dateRFC3339 is date in RFC 3339 (sprig has
		// none).
		"date":        formatDate,
		"dateRFC3339": func(v any) string { return formatDate(time.RFC3339, v) },
		"toDate":      toDate,
		// dateInZone: sprig's quietly uses UTC for an unknown zone
		// (funcTests "dateInZone unknown zone").
		"dateInZone": dateInZone,
		// unixEpoch: sprig's takes only a time.Time (funcTests "unixEpoch").
		"unixEpoch": func(v any) string {
			t, ok := asTime(v)
			if !ok {
				return ""
			}
			return strconv.FormatInt(t.Unix(), 10)
		},
		"ago": func(v any) string {
			t, ok := asTime(v)
			if !ok {
				return ""
			}
			return now().Sub(t).Round(time.Second).String()
		},
		// durationRound: sprig's reads the process's clock for a time, and
		// an RFC 3339 string or a number that is not an int64 as 0
		// (funcTests "durationRound"); this one reads them, then rounds
		// with sprig's.
		"durationRound": func(v any) string { return sprigDurationRound(int64(toDuration(v, now))) },
	}
}

// asTime reads a time.Time, an RFC 3339 string or Unix seconds.
func asTime(v any) (time.Time, bool) {
	switch t := v.(type) {
	case time.Time:
		return t, true
	case *time.Time:
		if t != nil {
			return *t, true
		}
	case string:
		if p, err := time.Parse(time.RFC3339Nano, t); err == nil {
			return p, true
		}
	case int:
		return time.Unix(int64(t), 0).UTC(), true
	case int32:
		return time.Unix(int64(t), 0).UTC(), true
	case int64:
		return time.Unix(t, 0).UTC(), true
	case float64:
		return time.Unix(toInt64(t), 0).UTC(), true
	}
	return time.Time{}, false
}

// formatDate formats a time with a Go layout, in the time's own zone (UTC
// for Unix seconds).
func formatDate(layout string, v any) string {
	t, ok := asTime(v)
	if !ok {
		return ""
	}
	return t.Format(layout)
}

// dateInZone is date in the named IANA zone ("UTC", "Europe/Paris"). An
// unknown zone is an error (sprig quietly uses UTC).
func dateInZone(layout string, v any, zone string) (string, error) {
	loc, err := time.LoadLocation(zone)
	if err != nil {
		return "", fmt.Errorf("dateInZone: unknown time zone %q", zone)
	}
	t, ok := asTime(v)
	if !ok {
		return "", nil
	}
	return t.In(loc).Format(layout), nil
}

func toDate(layout string, v any) (time.Time, error) {
	t, err := time.Parse(layout, toString(v))
	if err != nil {
		return time.Time{}, fmt.Errorf("toDate: %w", err)
	}
	return t, nil
}

// sprigDurationRound is sprig's durationRound, which gives a number of
// nanoseconds in its largest whole unit: y (365 days), mo (30 days), d,
// h, m or s, without a sign.
var sprigDurationRound = sprigFuncs["durationRound"].(func(any) string)

// toDuration reads a time.Duration, a Go duration string ("2h10m5s"), a
// number of nanoseconds, or a time (the duration since it); anything else
// is 0.
func toDuration(v any, now func() time.Time) time.Duration {
	switch x := v.(type) {
	case time.Duration:
		return x
	case string:
		if p, err := time.ParseDuration(x); err == nil {
			return p
		}
		if t, ok := asTime(x); ok {
			return now().Sub(t)
		}
		return 0
	case time.Time, *time.Time:
		if t, ok := asTime(x); ok {
			return now().Sub(t)
		}
		return 0
	}
	return time.Duration(toInt64(v))
}

// secondsAsInt64 gives sprig's duration SECONDS that is not a string as
// an int64, the one number type it reads: it reads an int or JSON's
// float64 as 0 seconds. A string it reads itself.
func secondsAsInt64(args []any) error {
	if _, ok := args[0].(string); !ok {
		args[0] = toInt64(args[0])
	}
	return nil
}
