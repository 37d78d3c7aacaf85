package windowscmd

import (
	"testing"
	"time"
)

// TestWindowsTimesCarryTheirDates: a window's next open/close time shows
// its date in the window's zone, and the UTC instant carries its own date
// whenever that is another day, so "tomorrow 09:00" never reads as today.
func TestWindowsTimesCarryTheirDates(t *testing.T) {
	at := func(s string) *time.Time {
		tm, err := time.Parse(time.RFC3339, s)
		if err != nil {
			t.Fatal(err)
		}
		return &tm
	}
	tests := []struct {
		name string
		t    *time.Time
		zone string
		want string
	}{
		{name: "never", zone: "UTC", want: "never"},
		{name: "UTC window", t: at("2026-11-28T09:00:00Z"), zone: "UTC", want: "2026-11-28 09:00Z"},
		{name: "no zone means UTC", t: at("2026-11-28T09:00:00Z"), zone: "", want: "2026-11-28 09:00Z"},
		{name: "same day in both", t: at("2026-11-28T09:00:00Z"), zone: "Europe/Berlin", want: "2026-11-28 10:00 CET (09:00Z)"},
		{name: "UTC is the day before", t: at("2026-11-27T23:00:00Z"), zone: "Asia/Tokyo", want: "2026-11-28 08:00 JST (2026-11-27 23:00Z)"},
		{name: "UTC is the day after", t: at("2026-11-28T02:00:00Z"), zone: "America/New_York", want: "2026-11-27 21:00 EST (2026-11-28 02:00Z)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := inZone(tt.t, tt.zone); got != tt.want {
				t.Errorf("inZone = %q, want %q", got, tt.want)
			}
		})
	}
}
