package windows

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/crowsnest-dev/crowsnest/config"
)

// now is a Monday 11:00 UTC: "open" windows (10:00 for 2h) are active,
// "shut" windows (20:00 for 1h) are not.
var now = time.Date(2026, 3, 2, 11, 0, 0, 0, time.UTC)

var shop = AppRef{Name: "shop", Namespace: "argocd", Project: "retail", DestNamespace: "shop",
	DestServer: "https://kubernetes.default.svc", Labels: map[string]string{"tier": "web"}}

func mustCompile(tb testing.TB, name string, sw config.SyncWindow) *Window {
	tb.Helper()
	w, err := Compile(name, sw)
	if err != nil {
		tb.Fatal(err)
	}
	return w
}

// win builds a window for shop: kind allow/deny, open or shut at now,
// manualSync or not.
func win(tb testing.TB, name, kind string, open, manual bool) *Window {
	tb.Helper()
	sw := config.SyncWindow{Kind: kind, Schedule: "0 20 * * *", Duration: config.Duration{Duration: time.Hour},
		Applications: []string{"shop"}, ManualSync: manual}
	if open {
		sw.Schedule, sw.Duration.Duration = "0 10 * * *", 2*time.Hour
	}
	return mustCompile(tb, name, sw)
}

type verdict struct {
	Allowed bool
	Reason  Reason
	Active  []string
}

func TestDecide(t *testing.T) {
	const allow, deny = config.WindowAllow, config.WindowDeny
	other := mustCompile(t, "other", config.SyncWindow{Kind: deny, Schedule: "0 10 * * *",
		Duration: config.Duration{Duration: 2 * time.Hour}, Applications: []string{"billing"}})
	tests := []struct {
		name   string
		set    Set
		manual bool
		want   verdict
	}{
		{name: "no windows", set: nil,
			want: verdict{true, ReasonNoWindows, nil}},
		{name: "no window matches the app", set: Set{other},
			want: verdict{true, ReasonNoWindows, nil}},
		{name: "active deny", set: Set{win(t, "d", deny, true, false)},
			want: verdict{false, ReasonDenyActive, []string{"d"}}},
		{name: "active deny, manual, no manualSync", manual: true,
			set:  Set{win(t, "d", deny, true, false)},
			want: verdict{false, ReasonDenyActive, []string{"d"}}},
		{name: "active deny with manualSync, manual", manual: true,
			set:  Set{win(t, "d", deny, true, true)},
			want: verdict{true, ReasonDenyManualSync, []string{"d"}}},
		{name: "active deny with manualSync, automatic",
			set:  Set{win(t, "d", deny, true, true)},
			want: verdict{false, ReasonDenyActive, []string{"d"}}},
		{name: "two active denies, only one with manualSync", manual: true,
			set:  Set{win(t, "d1", deny, true, true), win(t, "d2", deny, true, false)},
			want: verdict{false, ReasonDenyActive, []string{"d1", "d2"}}},
		{name: "two active denies, both with manualSync", manual: true,
			set:  Set{win(t, "d1", deny, true, true), win(t, "d2", deny, true, true)},
			want: verdict{true, ReasonDenyManualSync, []string{"d1", "d2"}}},
		{name: "inactive deny without manualSync does not count", manual: true,
			set:  Set{win(t, "d1", deny, true, true), win(t, "d2", deny, false, false)},
			want: verdict{true, ReasonDenyManualSync, []string{"d1"}}},
		{name: "active allow", set: Set{win(t, "a", allow, true, false)},
			want: verdict{true, ReasonAllowActive, []string{"a"}}},
		{name: "overlapping allow and deny: deny wins",
			set:  Set{win(t, "a", allow, true, false), win(t, "d", deny, true, false)},
			want: verdict{false, ReasonDenyActive, []string{"a", "d"}}},
		{name: "overlapping allow and deny, manual through deny's manualSync", manual: true,
			set:  Set{win(t, "a", allow, true, false), win(t, "d", deny, true, true)},
			want: verdict{true, ReasonDenyManualSync, []string{"a", "d"}}},
		{name: "outside the only allow window", set: Set{win(t, "a", allow, false, false)},
			want: verdict{false, ReasonOutsideAllow, nil}},
		{name: "outside an allow window with manualSync, manual", manual: true,
			set:  Set{win(t, "a", allow, false, true)},
			want: verdict{true, ReasonAllowManualSync, nil}},
		{name: "outside an allow window with manualSync, automatic",
			set:  Set{win(t, "a", allow, false, true)},
			want: verdict{false, ReasonOutsideAllow, nil}},
		{name: "outside two allow windows, one without manualSync", manual: true,
			set:  Set{win(t, "a1", allow, false, true), win(t, "a2", allow, false, false)},
			want: verdict{false, ReasonOutsideAllow, nil}},
		{name: "one of two allow windows active",
			set:  Set{win(t, "a1", allow, false, false), win(t, "a2", allow, true, false)},
			want: verdict{true, ReasonAllowActive, []string{"a2"}}},
		{name: "only an inactive deny", set: Set{win(t, "d", deny, false, false)},
			want: verdict{true, ReasonNoneActive, nil}},
		{name: "inactive deny and inactive allow",
			set:  Set{win(t, "d", deny, false, false), win(t, "a", allow, false, false)},
			want: verdict{false, ReasonOutsideAllow, nil}},
		{name: "active deny with manualSync beats an inactive allow without", manual: true,
			set:  Set{win(t, "d", deny, true, true), win(t, "a", allow, false, false)},
			want: verdict{true, ReasonDenyManualSync, []string{"d"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := tt.set.Decide(shop, now, tt.manual)
			got := verdict{Allowed: d.Allowed, Reason: d.Reason}
			for _, w := range d.Active {
				got.Active = append(got.Active, w.Name())
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Decide(manual=%v) (-want +got):\n%s", tt.manual, diff)
			}
		})
	}
}

func TestNextBoundaryAndHolding(t *testing.T) {
	no := false
	nightly := mustCompile(t, "nightly", config.SyncWindow{Kind: config.WindowDeny, Schedule: "0 22 * * *",
		Duration: config.Duration{Duration: 4 * time.Hour}, TimeZone: "Europe/Berlin", Projects: []string{"*"}})
	morning := mustCompile(t, "morning", config.SyncWindow{Kind: config.WindowAllow, Schedule: "30 10 * * 1-5",
		Duration: config.Duration{Duration: time.Hour}, Projects: []string{"*"}, HoldImageUpdates: &no, SyncOnOpen: true})
	set := Set{nightly, morning}
	tests := []struct {
		at, want string
	}{
		{at: "2026-03-02T11:00:00Z", want: "2026-03-02T11:30:00Z"},           // morning closes
		{at: "2026-03-02T11:30:00Z", want: "2026-03-02T21:00:00Z"},           // nightly opens (22:00 CET)
		{at: "2026-03-02T21:00:00Z", want: "2026-03-02T21:00:00Z"},           // closed at the start second; opens just after
		{at: "2026-03-02T21:00:00.5Z", want: "2026-03-03T01:00:00Z"},         // nightly closes across midnight
		{at: "2026-03-06T12:00:00Z", want: "2026-03-06T21:00:00Z"},           // Friday
		{at: "2026-03-07T01:00:00Z", want: "2026-03-07T21:00:00Z"},           // weekend: only nightly
		{at: "2026-03-28T21:30:00Z", want: "2026-03-29T01:00:00Z"},           // 4h elapsed across the DST jump
		{at: "2026-03-29T01:00:00Z", want: "2026-03-29T20:00:00Z"},           // 22:00 CEST
		{at: "2026-03-02T10:29:59.5Z", want: "2026-03-02T10:30:00Z"},         // sub-second before an open
		{at: "2026-03-02T10:30:00.000000001Z", want: "2026-03-02T11:30:00Z"}, // just after it
	}
	for _, tt := range tests {
		at, err := time.Parse(time.RFC3339Nano, tt.at)
		if err != nil {
			t.Fatal(err)
		}
		got, ok := set.NextBoundary(at)
		if !ok || got.UTC().Format(time.RFC3339) != tt.want {
			t.Errorf("NextBoundary(%s) = %s, %v; want %s", tt.at, got.UTC().Format(time.RFC3339), ok, tt.want)
		}
	}
	if _, ok := (Set{}).NextBoundary(now); ok {
		t.Error("an empty set has a boundary")
	}
	var held []string
	for _, w := range set.HoldingUpdates() {
		held = append(held, w.Name())
	}
	if diff := cmp.Diff([]string{"nightly"}, held); diff != "" {
		t.Errorf("HoldingUpdates (-want +got):\n%s", diff)
	}
}

// BenchmarkDecide100 decides for one Application against 100 windows in
// several zones, about half of which match it.
func BenchmarkDecide100(b *testing.B) {
	zones := []string{"UTC", "Europe/Berlin", "America/New_York", "Australia/Lord_Howe", "Asia/Kathmandu"}
	var set Set
	for i := range 100 {
		sw := config.SyncWindow{
			Kind:     []string{config.WindowAllow, config.WindowDeny}[i%2],
			Schedule: fmt.Sprintf("%d %d * * %d-5", i%60, i%24, i%5), Duration: config.Duration{Duration: time.Duration(1+i%12) * time.Hour},
			TimeZone: zones[i%len(zones)], Applications: []string{fmt.Sprintf("shop-%d*", i%2), "billing"},
			Namespaces: []string{"shop"}, LabelSelector: "tier in (web, api)", AndOperator: i%3 == 0,
		}
		set = append(set, mustCompile(b, fmt.Sprintf("w%d", i), sw))
	}
	app := shop
	app.Name = "shop-1"
	for b.Loop() {
		set.Decide(app, now, false)
	}
}
