package render

import (
	"fmt"
	"strconv"
	"text/template"
	"time"
	_ "time/tzdata" // dateInZone's zones must not depend on the image having a zoneinfo folder
)

// timeFuncs are crowsnest's own time helpers, none of them sprig's:
// sprig's read the process's clock (now, ago, durationRound) and time
// zone (date and toDate use Local), take only a time.Time where
// Kubernetes gives RFC 3339 strings (.app.status.operationState.finishedAt),
// print the current time for a value that is no time, read a number of
// seconds as 0 unless it is an int64 (duration), and fall back to UTC for
// an unknown zone. These take a time.Time, an RFC 3339 string or Unix
// seconds; a value that is none formats as "". Layouts are Go's
// (2006-01-02 15:04:05).
func timeFuncs(now func() time.Time) template.FuncMap {
	return template.FuncMap{
		// now, ago and durationRound: sprig's read the process's clock, not
		// the one Compile was given (WithClock).
		"now": now,
		// date and toDate: sprig's use the process's Local zone, and its
		// date prints the current time for an RFC 3339 string; dateRFC3339
		// is date in RFC 3339 (sprig has none).
		"date":        formatDate,
		"dateRFC3339": func(v any) string { return formatDate(time.RFC3339, v) },
		"toDate":      toDate,
		// dateInZone: sprig's quietly uses UTC for an unknown zone.
		"dateInZone": dateInZone,
		// unixEpoch: sprig's takes only a time.Time.
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
		// duration: sprig's reads a number that is not an int64 (JSON's
		// float64) as 0 seconds.
		"duration":      func(v any) string { return (time.Duration(toInt64(v)) * time.Second).String() },
		"durationRound": func(v any) string { return durationRound(v, now) },
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

// durationRound gives a duration in its largest whole unit: y (365 days),
// mo (30 days), d, h, m or s, without a sign. It takes a time.Duration, a
// Go duration string ("2h10m5s"), a number of nanoseconds, or a time
// (the duration since it).
func durationRound(v any, now func() time.Time) string {
	var d time.Duration
	switch x := v.(type) {
	case time.Duration:
		d = x
	case string:
		if p, err := time.ParseDuration(x); err == nil {
			d = p
		} else if t, ok := asTime(x); ok {
			d = now().Sub(t)
		}
	case time.Time, *time.Time:
		if t, ok := asTime(x); ok {
			d = now().Sub(t)
		}
	default:
		d = time.Duration(toInt64(v))
	}
	u := uint64(d)
	if d < 0 {
		u = -u
	}
	const day = uint64(24 * time.Hour)
	for _, unit := range []struct {
		size   uint64
		suffix string
	}{
		{365 * day, "y"}, {30 * day, "mo"}, {day, "d"},
		{uint64(time.Hour), "h"}, {uint64(time.Minute), "m"}, {uint64(time.Second), "s"},
	} {
		if u > unit.size {
			return strconv.FormatUint(u/unit.size, 10) + unit.suffix
		}
	}
	return "0s"
}
