package windows

import (
	"encoding/json"
	"errors"
	"strings"
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

// FuzzFromAppProject reads arbitrary JSON as an AppProject, as the watcher
// hands it over: wrong shapes are errors, not panics; every window error
// names the project's window and field; the windows that compile decide.
func FuzzFromAppProject(f *testing.F) {
	for _, seed := range []string{
		`{"metadata":{"name":"payments","namespace":"argocd"},"spec":{"syncWindows":[{"kind":"deny","schedule":"0 22 * * *","duration":"10h","applications":["*"],"manualSync":true,"timeZone":"Europe/Berlin"},{"kind":"allow","schedule":"30 9 * * 1-5","duration":"30m","namespaces":["pay-*"],"clusters":["in-cluster"],"andOperator":true}]}}`,
		`{"metadata":{"name":"p"},"spec":{"syncWindows":[{"kind":"deny","schedule":"0 0 30 2 *","duration":"1h","applications":["*"]}]}}`,
		`{"metadata":{"name":"p"},"spec":{"syncWindows":[{"kind":"block","schedule":"x","duration":"200000d","timeZone":"Mars/Olympus"}]}}`,
		`{"metadata":{"name":"p"},"spec":{"syncWindows":"nope"}}`,
		`{"metadata":{"name":""},"spec":{}}`,
		`{"metadata":{"name":"p"},"spec":{"syncWindows":[null,{},{"duration":7}]}}`,
		`{"metadata":{"name":"p"},"spec":{"syncWindows":[{"kind":"allow","schedule":"@every 1h","duration":"1h","applications":["[!a-"]}]}}`,
	} {
		f.Add([]byte(seed))
	}
	now := time.Date(2026, 3, 29, 0, 30, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, data []byte) {
		var obj map[string]any
		if json.Unmarshal(data, &obj) != nil || obj == nil {
			return
		}
		set, err := FromAppProject(obj)
		if err != nil {
			errs := []error{err}
			if j, ok := err.(interface{ Unwrap() []error }); ok {
				errs = j.Unwrap()
			}
			for _, e := range errs {
				var werr *Error
				if errors.As(e, &werr) && (!strings.HasPrefix(werr.Window, "AppProject ") || werr.Field == "") {
					t.Fatalf("error %v does not name the AppProject window and field", e)
				}
			}
		}
		for _, w := range set {
			if w.Project() == "" {
				t.Fatalf("window %s has no project", w.Name())
			}
		}
		set.Decide(AppRef{Name: "web", Project: "p", DestNamespace: "pay-1", DestServer: "https://kubernetes.default.svc"}, now, false)
		set.NextBoundary(now)
	})
}
