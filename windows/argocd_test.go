package windows

import (
	"strings"
	"testing"
	"time"

	"github.com/crowsnest-dev/crowsnest/config"
)

// Facts of Argo CD v3.6.1's SyncWindows evaluation that crowsnest once
// answered differently (test/conformance checks them against Argo CD's
// code at scale; these rows keep them in the main module).
func TestArgoCDWindowSemantics(t *testing.T) {
	tests := []struct {
		name, schedule, duration, zone, at string
		want                               bool
	}{
		{"closed at the exact start second", "0 22 * * *", "1h", "", "2026-03-02T22:00:00Z", false},
		{"open a nanosecond after the start", "0 22 * * *", "1h", "", "2026-03-02T22:00:00.000000001Z", true},
		{"closed at the exact end second", "0 22 * * *", "1h", "", "2026-03-02T23:00:00Z", false},
		// 22:00 CET + 5h of wall clock ends at 03:00 CEST, 01:00 UTC; four
		// elapsed hours, not five.
		{"duration is wall-clock time across spring forward", "0 22 * * *", "5h", "Europe/Berlin", "2026-03-29T01:30:00Z", false},
		{"still open before the wall-clock end", "0 22 * * *", "5h", "Europe/Berlin", "2026-03-29T00:59:59Z", true},
		// 02:30 for 1h on the night clocks turn back 03:00 CEST -> 02:00 CET:
		// at 01:15 UTC the wall reads 02:15 (second time), outside (02:30, 03:30).
		{"turned-back hour re-reads the wall clock", "30 2 * * *", "1h", "Europe/Berlin", "2026-10-25T01:15:00Z", false},
		{"the second 02:45 is inside", "30 2 * * *", "1h", "Europe/Berlin", "2026-10-25T01:45:00Z", true},
		// 02:30 is skipped (02:00 -> 03:00 CEST): open from the jump to 03:30.
		{"skipped start: closed at 03:30 wall clock", "30 2 * * *", "1h", "Europe/Berlin", "2026-03-29T01:40:00Z", false},
		{"skipped start: open from the jump", "30 2 * * *", "1h", "Europe/Berlin", "2026-03-29T01:00:00Z", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			set, err := FromAppProject(map[string]any{"metadata": map[string]any{"name": "p"}, "spec": map[string]any{
				"syncWindows": []any{map[string]any{"kind": "deny", "schedule": tt.schedule, "duration": tt.duration,
					"timeZone": tt.zone, "applications": []any{"*"}}}}})
			if err != nil {
				t.Fatal(err)
			}
			at, err := time.Parse(time.RFC3339Nano, tt.at)
			if err != nil {
				t.Fatal(err)
			}
			if got := set[0].Active(at); got != tt.want {
				t.Errorf("Active(%s) = %v, want %v", tt.at, got, tt.want)
			}
		})
	}
}

// Argo CD reads AppProject schedules without descriptors or weekday 7 and
// durations with time.ParseDuration; what it cannot read, crowsnest refuses
// in an AppProject too, while its own config keeps those extensions.
func TestAppProjectUsesArgoCDGrammar(t *testing.T) {
	for _, tt := range []struct{ schedule, duration, field string }{
		{"@daily", "1h", "schedule"}, {"0 0 * * 7", "1h", "schedule"}, {"0 22 * * 5-7", "1h", "schedule"},
		{"0 22 * * *", "1d", "duration"},
	} {
		_, err := FromAppProject(map[string]any{"metadata": map[string]any{"name": "p"}, "spec": map[string]any{
			"syncWindows": []any{map[string]any{"kind": "deny", "schedule": tt.schedule, "duration": tt.duration, "applications": []any{"*"}}}}})
		if err == nil || !strings.Contains(err.Error(), "spec.syncWindows[0]: "+tt.field+": ") {
			t.Errorf("%q for %s: error %v, want one naming %s", tt.schedule, tt.duration, err, tt.field)
		}
		d, _ := config.ParseDuration(tt.duration)
		if _, err := Compile("syncWindows[0]", config.SyncWindow{Kind: "deny", Schedule: tt.schedule, Duration: d, Applications: []string{"*"}}); err != nil {
			t.Errorf("crowsnest config %q %s: %v, want accepted", tt.schedule, tt.duration, err)
		}
	}
}
