package spec

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

type evaluation struct {
	Active    bool
	LastStart string
	NextOpen  string
	NextClose string
}

func TestWindowEvaluation(t *testing.T) {
	const never = "none"
	tests := []struct {
		name     string
		zone     string
		schedule string
		duration time.Duration
		at       string // RFC 3339
		want     evaluation
	}{
		{name: "crossing midnight, open after midnight", zone: "UTC", schedule: "0 22 * * *", duration: 4 * time.Hour,
			at:   "2026-03-02T01:00:00Z",
			want: evaluation{true, "2026-03-01T22:00:00Z", "2026-03-02T22:00:00Z", "2026-03-02T02:00:00Z"}},
		{name: "exactly at the start second it is closed (Argo CD); it opens just after", zone: "UTC", schedule: "0 22 * * *", duration: time.Hour,
			at:   "2026-03-02T22:00:00Z",
			want: evaluation{false, never, "2026-03-02T22:00:00Z", "2026-03-02T23:00:00Z"}},
		{name: "exactly at the end is closed", zone: "UTC", schedule: "0 22 * * *", duration: time.Hour,
			at:   "2026-03-02T23:00:00Z",
			want: evaluation{false, never, "2026-03-03T22:00:00Z", "2026-03-03T23:00:00Z"}},
		{name: "previous start days ago", zone: "UTC", schedule: "0 0 * * 1", duration: 6*24*time.Hour + 13*time.Hour,
			at:   "2026-03-08T12:00:00Z",
			want: evaluation{true, "2026-03-02T00:00:00Z", "2026-03-09T00:00:00Z", "2026-03-08T13:00:00Z"}},
		{name: "monthly for 30 days of wall-clock time", zone: "Europe/Berlin", schedule: "0 0 1 * *", duration: 30 * 24 * time.Hour,
			at:   "2026-03-15T12:00:00+01:00",
			want: evaluation{true, "2026-03-01T00:00:00+01:00", "2026-04-01T00:00:00+02:00", "2026-03-31T00:00:00+02:00"}},
		{name: "hourly for 2h never closes", zone: "UTC", schedule: "0 * * * *", duration: 2 * time.Hour,
			at:   "2026-03-02T10:30:00Z",
			want: evaluation{true, "2026-03-02T10:00:00Z", never, never}},
		{name: "back to back runs: closed for the instant of each start", zone: "Europe/Berlin", schedule: "0 */2 * * *", duration: 2 * time.Hour,
			at:   "2026-03-29T12:00:00+02:00",
			want: evaluation{false, never, "2026-03-29T12:00:00+02:00", "2026-03-29T14:00:00+02:00"}},
		{name: "weekdays all day close on Saturday", zone: "UTC", schedule: "* * * * 1-5", duration: time.Minute,
			at:   "2026-03-04T12:00:00Z",
			want: evaluation{false, never, "2026-03-04T12:00:00Z", "2026-03-04T12:01:00Z"}},
		// Clocks jump 02:00 -> 03:00: the 02:30 start happens at the jump.
		{name: "Berlin gap: opens at the jump, closes at the wall-clock end", zone: "Europe/Berlin", schedule: "30 2 * * *", duration: time.Hour,
			at:   "2026-03-29T00:00:00+01:00",
			want: evaluation{false, never, "2026-03-29T03:00:00+02:00", "2026-03-29T03:30:00+02:00"}},
		{name: "Berlin gap merges skipped starts", zone: "Europe/Berlin", schedule: "*/30 2 * * *", duration: 30 * time.Minute,
			at:   "2026-03-29T03:10:00+02:00",
			want: evaluation{false, never, "2026-03-30T02:00:00+02:00", "2026-03-30T02:30:00+02:00"}},
		{name: "duration is wall-clock time across the gap (Argo CD)", zone: "Europe/Berlin", schedule: "0 1 * * *", duration: 3 * time.Hour,
			at:   "2026-03-29T01:30:00+01:00",
			want: evaluation{true, "2026-03-29T01:00:00+01:00", "2026-03-30T01:00:00+02:00", "2026-03-29T04:00:00+02:00"}},
		// Clocks fall back 03:00 -> 02:00: 02:30 happens twice.
		{name: "Berlin overlap starts twice", zone: "Europe/Berlin", schedule: "30 2 * * *", duration: 15 * time.Minute,
			at:   "2026-10-25T02:50:00+02:00",
			want: evaluation{false, never, "2026-10-25T02:30:00+01:00", "2026-10-25T02:45:00+01:00"}},
		{name: "New York gap", zone: "America/New_York", schedule: "30 2 * * *", duration: time.Hour,
			at:   "2026-03-08T00:00:00-05:00",
			want: evaluation{false, never, "2026-03-08T03:00:00-04:00", "2026-03-08T03:30:00-04:00"}},
		{name: "New York overlap keeps an hourly window open", zone: "America/New_York", schedule: "0 * * * *", duration: 30 * time.Minute,
			at:   "2026-11-01T01:40:00-04:00",
			want: evaluation{false, never, "2026-11-01T01:00:00-05:00", "2026-11-01T01:30:00-05:00"}},
		// Lord Howe moves by 30 minutes: 02:00 -> 02:30 and back.
		{name: "Lord Howe gap", zone: "Australia/Lord_Howe", schedule: "15 2 * * *", duration: time.Hour,
			at:   "2026-10-04T01:00:00+10:30",
			want: evaluation{false, never, "2026-10-04T02:30:00+11:00", "2026-10-04T03:15:00+11:00"}},
		{name: "Lord Howe 3am after the gap is on time", zone: "Australia/Lord_Howe", schedule: "0 3 * * *", duration: time.Minute,
			at:   "2026-10-04T01:00:00+10:30",
			want: evaluation{false, never, "2026-10-04T03:00:00+11:00", "2026-10-04T03:01:00+11:00"}},
		{name: "Lord Howe overlap", zone: "Australia/Lord_Howe", schedule: "45 1 * * *", duration: 10 * time.Minute,
			at:   "2026-04-05T01:50:00+11:00",
			want: evaluation{true, "2026-04-05T01:45:00+10:30", "2026-04-05T01:45:00+10:30", "2026-04-05T01:55:00+11:00"}},
		{name: "Kathmandu quarter-hour offset", zone: "Asia/Kathmandu", schedule: "0 0 * * *", duration: time.Hour,
			at:   "2026-06-01T18:00:00Z",
			want: evaluation{false, never, "2026-06-02T00:00:00+05:45", "2026-06-02T01:00:00+05:45"}},
		{name: "Santiago midnight gap", zone: "America/Santiago", schedule: "0 0 * * *", duration: time.Hour,
			at:   "2026-09-05T23:00:00-04:00",
			want: evaluation{false, never, "2026-09-07T00:00:00-03:00", "2026-09-07T01:00:00-03:00"}},
		// Samoa skipped 30 December 2011 entirely.
		{name: "a skipped day (Samoa 2011-12-30) does not start", zone: "Pacific/Apia", schedule: "0 12 30 12 *", duration: time.Hour,
			at:   "2011-12-29T12:00:00-10:00",
			want: evaluation{false, never, "2012-12-30T12:00:00+14:00", "2012-12-30T13:00:00+14:00"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			loc, err := LoadZone(tt.zone)
			if err != nil {
				t.Fatal(err)
			}
			s, err := Parse(tt.schedule, loc)
			if err != nil {
				t.Fatal(err)
			}
			at, err := time.Parse(time.RFC3339, tt.at)
			if err != nil {
				t.Fatal(err)
			}
			format := func(t time.Time, ok bool) string {
				if !ok {
					return never
				}
				return t.In(loc).Format(time.RFC3339)
			}
			got := evaluation{Active: s.Active(at, tt.duration)}
			got.LastStart = format(s.LastStart(at, tt.duration))
			got.NextOpen = format(s.NextOpen(at, tt.duration))
			got.NextClose = format(s.NextClose(at, tt.duration))
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("%q for %s at %s (-want +got):\n%s", tt.schedule, tt.duration, tt.at, diff)
			}
		})
	}
}

func TestNonPositiveDurationIsNeverActive(t *testing.T) {
	s, err := Parse("* * * * *", nil)
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, d := range []time.Duration{0, -time.Hour} {
		_, openOK := s.NextOpen(at, d)
		_, closeOK := s.NextClose(at, d)
		if s.Active(at, d) || openOK || closeOK {
			t.Errorf("duration %s: active %v, next open %v, next close %v; want all false", d, s.Active(at, d), openOK, closeOK)
		}
	}
}

func BenchmarkActive(b *testing.B) {
	loc, err := LoadZone("Europe/Berlin")
	if err != nil {
		b.Fatal(err)
	}
	s, err := Parse("30 22 * * 1-5", loc)
	if err != nil {
		b.Fatal(err)
	}
	at := time.Date(2026, 3, 29, 12, 0, 0, 0, time.UTC)
	for b.Loop() {
		s.Active(at, 9*time.Hour)
	}
}

func BenchmarkNextCloseAlwaysOpen(b *testing.B) {
	s, err := Parse("* * * * *", nil)
	if err != nil {
		b.Fatal(err)
	}
	at := time.Date(2026, 3, 29, 12, 0, 0, 0, time.UTC)
	for b.Loop() {
		s.NextClose(at, time.Hour)
	}
}
