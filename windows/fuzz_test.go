package windows

import (
	"errors"
	"testing"
	"time"

	"github.com/crowsnest-dev/crowsnest/config"
)

// FuzzCompile compiles arbitrary window specs as they come from a config or
// an AppProject. Whatever compiles must decide and find boundaries without
// panicking, and a boundary must really change the decision's inputs.
func FuzzCompile(f *testing.F) {
	f.Add("deny", "0 22 * * *", "10h", "Europe/Berlin", "shop-*", "tier=web", true)
	f.Add("allow", "*/30 2 * * 7", "45m", "Australia/Lord_Howe", "{a,b}", "", false)
	f.Add("deny", "0 0 30 2 *", "1h", "", "*", "", false)
	f.Add("allow", "@weekly", "7d", "Asia/Kathmandu", "[!x]*", "a in (b", true)
	f.Fuzz(func(t *testing.T, kind, schedule, duration, zone, glob, selector string, and bool) {
		d, err := config.ParseDuration(duration)
		if err != nil {
			return
		}
		w, err := Compile("fuzz", config.SyncWindow{Kind: kind, Schedule: schedule, Duration: d, TimeZone: zone,
			Applications: []string{glob}, LabelSelector: selector, AndOperator: and})
		if err != nil {
			var werr *Error
			if !errors.As(err, &werr) || werr.Window != "fuzz" || werr.Field == "" {
				t.Fatalf("error %v does not name the window and field", err)
			}
			return
		}
		now := time.Date(2026, 10, 4, 15, 29, 59, 0, time.UTC)
		set := Set{w}
		set.Decide(AppRef{Name: glob, Labels: map[string]string{"tier": "web"}}, now, true)
		if b, ok := set.NextBoundary(now); ok && (!b.After(now) || w.Active(b) == w.Active(b.Add(-time.Nanosecond))) {
			t.Fatalf("%q for %s in %q: boundary %s after %s does not change Active", schedule, d, zone, b, now)
		}
	})
}
