package windows

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/crowsnest-dev/crowsnest/config"
	"github.com/crowsnest-dev/crowsnest/windows/spec"
)

func TestCompileErrorsNameWindowAndField(t *testing.T) {
	valid := config.SyncWindow{Kind: config.WindowDeny, Schedule: "0 22 * * *",
		Duration: config.Duration{Duration: time.Hour}, Description: "nightly", Applications: []string{"*"}}
	tests := []struct {
		name   string
		change func(*config.SyncWindow)
		want   []string
	}{
		{name: "never fires", change: func(w *config.SyncWindow) { w.Schedule = "0 0 31 2 *" },
			want: []string{`sync window syncWindows[3] ("nightly"): schedule: invalid schedule "0 0 31 2 *": schedule can never fire (no month has such a day)`}},
		{name: "kind", change: func(w *config.SyncWindow) { w.Kind = "block" },
			want: []string{`sync window syncWindows[3] ("nightly"): kind: unsupported value "block", want allow or deny`}},
		{name: "zero duration", change: func(w *config.SyncWindow) { w.Duration.Duration = 0 },
			want: []string{`sync window syncWindows[3] ("nightly"): duration: must be positive and at most 8784h0m0s, got 0s`}},
		{name: "zone and schedule both reported", change: func(w *config.SyncWindow) { w.TimeZone, w.Schedule = "Nowhere/Land", "@every 1h" },
			want: []string{
				`sync window syncWindows[3] ("nightly"): timeZone: unknown time zone "Nowhere/Land"`,
				`sync window syncWindows[3] ("nightly"): schedule: invalid schedule "@every 1h"`,
			}},
		{name: "glob", change: func(w *config.SyncWindow) { w.Namespaces = []string{"ok", "{a,b"} },
			want: []string{`sync window syncWindows[3] ("nightly"): namespaces[1]: invalid pattern "{a,b": unclosed {`}},
		{name: "label selector", change: func(w *config.SyncWindow) { w.LabelSelector = "!!" },
			want: []string{`sync window syncWindows[3] ("nightly"): labelSelector:`}},
		{name: "syncOnOpen on deny", change: func(w *config.SyncWindow) { w.SyncOnOpen = true },
			want: []string{`sync window syncWindows[3] ("nightly"): syncOnOpen: only allow windows can start syncs`}},
		{name: "no description", change: func(w *config.SyncWindow) { w.Description, w.Kind = "", "" },
			want: []string{`sync window syncWindows[3]: kind: unsupported value ""`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sw := valid
			tt.change(&sw)
			w, err := Compile("syncWindows[3]", sw)
			if err == nil {
				t.Fatalf("Compile() = %v, want an error", w)
			}
			got := strings.Split(err.Error(), "\n")
			for i := range got {
				if i < len(tt.want) && strings.HasPrefix(got[i], tt.want[i]) {
					got[i] = tt.want[i]
				}
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
			var werr *Error
			if !errors.As(err, &werr) || werr.Window != "syncWindows[3]" {
				t.Errorf("error %v does not unwrap to an *Error for the window", err)
			}
		})
	}
	_, err := Compile("w", config.SyncWindow{Kind: "deny", Schedule: "0 0 30 2 *", Duration: config.Duration{Duration: time.Hour}})
	if !errors.Is(err, spec.ErrNeverFires) {
		t.Errorf("error %v is not spec.ErrNeverFires", err)
	}
}

func TestWindowAccessorsAndTimes(t *testing.T) {
	w := mustCompile(t, "syncWindows[0]", config.SyncWindow{Kind: config.WindowAllow, Schedule: "0 23 * * *",
		Duration: config.Duration{Duration: 2 * time.Hour}, TimeZone: "Asia/Kathmandu", Description: "late",
		Projects: []string{"*"}, ManualSync: true, SyncOnOpen: true})
	type view struct {
		Name, String, Description, Zone string
		Kind                            Kind
		Duration                        time.Duration
		Manual, Hold, SyncOnOpen        bool
		ActiveAt0030                    bool
		LastStart, NextOpen, NextClose  string
	}
	at := time.Date(2026, 3, 3, 0, 30, 0, 0, w.Location()) // crossing midnight
	format := func(t time.Time, ok bool) string {
		if !ok {
			return "none"
		}
		return t.Format(time.RFC3339)
	}
	got := view{Name: w.Name(), String: w.String(), Description: w.Description(), Zone: w.Location().String(),
		Kind: w.Kind(), Duration: w.Duration(), Manual: w.ManualSync(), Hold: w.HoldsImageUpdates(),
		SyncOnOpen: w.SyncOnOpen(), ActiveAt0030: w.Active(at)}
	got.LastStart = format(w.LastStart(at))
	got.NextOpen = format(w.NextOpen(at))
	got.NextClose = format(w.NextClose(at))
	want := view{Name: "syncWindows[0]", String: `syncWindows[0] ("late")`, Description: "late", Zone: "Asia/Kathmandu",
		Kind: Allow, Duration: 2 * time.Hour, Manual: true, Hold: true, SyncOnOpen: true, ActiveAt0030: true,
		LastStart: "2026-03-02T23:00:00+05:45", NextOpen: "2026-03-03T23:00:00+05:45", NextClose: "2026-03-03T01:00:00+05:45"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("window (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff("0 23 * * *", w.Spec().Schedule); diff != "" || w.Project() != "" {
		t.Errorf("Spec().Schedule (-want +got):\n%s, Project() = %q", diff, w.Project())
	}
}
