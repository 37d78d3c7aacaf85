package spec

import (
	"errors"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/robfig/cron/v3"
)

func TestParse(t *testing.T) {
	tests := []struct {
		name     string
		schedule string
		// first three starts at or after 2026-03-02 00:00 UTC (a Monday)
		want    []string
		wantErr string
	}{
		{name: "daily", schedule: "30 22 * * *", want: []string{"03-02 22:30 Mon", "03-03 22:30 Tue", "03-04 22:30 Wed"}},
		{name: "7 is Sunday", schedule: "0 1 * * 7", want: []string{"03-08 01:00 Sun", "03-15 01:00 Sun", "03-22 01:00 Sun"}},
		{name: "range to 7", schedule: "0 1 * * 6-7", want: []string{"03-07 01:00 Sat", "03-08 01:00 Sun", "03-14 01:00 Sat"}},
		{name: "range to 7 with step", schedule: "0 1 * * 3-7/2", want: []string{"03-04 01:00 Wed", "03-06 01:00 Fri", "03-08 01:00 Sun"}},
		{name: "names", schedule: "0 0 * mar sat,SUN", want: []string{"03-07 00:00 Sat", "03-08 00:00 Sun", "03-14 00:00 Sat"}},
		{name: "day of month OR day of week", schedule: "0 0 13 * 5", want: []string{"03-06 00:00 Fri", "03-13 00:00 Fri", "03-20 00:00 Fri"}},
		{name: "day of month AND star weekday", schedule: "0 0 5 * *", want: []string{"03-05 00:00 Thu", "04-05 00:00 Sun", "05-05 00:00 Tue"}},
		{name: "hourly", schedule: "@hourly", want: []string{"03-02 00:00 Mon", "03-02 01:00 Mon", "03-02 02:00 Mon"}},
		{name: "weekly", schedule: "@weekly", want: []string{"03-08 00:00 Sun", "03-15 00:00 Sun", "03-22 00:00 Sun"}},
		{name: "monthly", schedule: "@monthly", want: []string{"04-01 00:00 Wed", "05-01 00:00 Fri", "06-01 00:00 Mon"}},
		{name: "Feb 29 waits for a leap year", schedule: "0 0 29 2 *", want: []string{"2028-02-29", "2032-02-29", "2036-02-29"}},
		{name: "Feb 30 never fires", schedule: "0 0 30 2 *", wantErr: "can never fire"},
		{name: "Apr 31 never fires", schedule: "0 0 31 4,6 *", wantErr: "can never fire"},
		{name: "six fields", schedule: "0 0 0 * * *", wantErr: "want 5 fields"},
		{name: "four fields", schedule: "0 0 * *", wantErr: "want 5 fields"},
		{name: "out of range", schedule: "60 * * * *", wantErr: "above maximum"},
		{name: "8 is no weekday", schedule: "0 0 * * 8", wantErr: "above maximum"},
		{name: "every", schedule: "@every 1h", wantErr: "want 5 cron fields or one of"},
		{name: "unknown descriptor", schedule: "@often", wantErr: "want 5 cron fields or one of"},
		{name: "zone prefix", schedule: "TZ=Europe/Berlin 0 0 * * *", wantErr: "set the zone in timeZone"},
		{name: "zone prefix without fields", schedule: "CRON_TZ=x", wantErr: "set the zone in timeZone"},
		{name: "empty", schedule: " ", wantErr: "empty schedule"},
		{name: "garbage", schedule: "a b c d e", wantErr: "invalid schedule"},
	}
	from := time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := Parse(tt.schedule, nil)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Parse(%q) error = %v, want one containing %q", tt.schedule, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Parse(%q): %v", tt.schedule, err)
			}
			layout := "01-02 15:04 Mon"
			if strings.HasPrefix(tt.want[0], "20") {
				layout = "2006-01-02"
			}
			var got []string
			for at := from; len(got) < 3; {
				n, ok := s.Next(at)
				if !ok {
					t.Fatalf("Next(%s) found nothing", at)
				}
				got = append(got, n.Format(layout))
				at = n.Add(time.Second)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("starts (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseNeverFiresIsSentinel(t *testing.T) {
	_, err := Parse("0 0 31 2,4 *", time.UTC)
	if !errors.Is(err, ErrNeverFires) {
		t.Fatalf("error %v is not ErrNeverFires", err)
	}
}

// In UTC there is no DST, so robfig/cron's own Next must agree with ours.
func TestNextMatchesRobfigInUTC(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	parser := cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)
	base := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	for range 300 {
		text := randomSchedule(rng)
		if strings.Contains(text, "7") && !strings.HasPrefix(text, "@") {
			text = strings.ReplaceAll(text, "5-7", "5-6,0")
			text = strings.ReplaceAll(text, "6,7", "6,0")
		}
		ours, err := Parse(text, time.UTC)
		if err != nil {
			t.Fatalf("Parse(%q): %v", text, err)
		}
		theirs, err := parser.Parse("TZ=UTC " + text)
		if err != nil {
			t.Fatalf("robfig Parse(%q): %v", text, err)
		}
		at := base.Add(time.Duration(rng.Int64N(int64(3 * year))))
		got, ok := ours.Next(at.Add(time.Nanosecond)) // robfig's Next is strictly after
		want := theirs.Next(at)
		if !ok || !got.Equal(want) {
			t.Fatalf("%q after %s: got %s (%v), robfig %s", text, at, got, ok, want)
		}
	}
}

func TestLoadZone(t *testing.T) {
	tests := []struct {
		name, zone string
		want       string
		wantErr    bool
	}{
		{name: "empty is UTC", zone: "", want: "UTC"},
		{name: "UTC", zone: "UTC", want: "UTC"},
		{name: "IANA", zone: "Australia/Lord_Howe", want: "Australia/Lord_Howe"},
		{name: "Local refused", zone: "Local", wantErr: true},
		{name: "unknown", zone: "Mars/Olympus_Mons", wantErr: true},
		{name: "path escape", zone: "../../etc/passwd", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			loc, err := LoadZone(tt.zone)
			if (err != nil) != tt.wantErr {
				t.Fatalf("LoadZone(%q) error = %v, wantErr %v", tt.zone, err, tt.wantErr)
			}
			if err == nil && loc.String() != tt.want {
				t.Errorf("LoadZone(%q) = %s, want %s", tt.zone, loc, tt.want)
			}
		})
	}
}

func TestCivilRoundTrip(t *testing.T) {
	for day := int64(-800_000); day < 800_000; day += 997 {
		y, m, d := civilFromDays(day)
		if got := daysFromCivil(y, m, d); got != day {
			t.Fatalf("day %d -> %d-%d-%d -> %d", day, y, m, d, got)
		}
		want := time.Unix(day*86400, 0).UTC()
		if y != want.Year() || m != int(want.Month()) || d != want.Day() {
			t.Fatalf("day %d = %d-%02d-%02d, time package says %s", day, y, m, d, want.Format(time.DateOnly))
		}
	}
}
