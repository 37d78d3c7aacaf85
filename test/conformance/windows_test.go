package conformance

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	argo "github.com/argoproj/argo-cd/v3/pkg/apis/application/v1alpha1"
	"github.com/robfig/cron/v3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/crowsnest-dev/crowsnest/windows"
	"github.com/crowsnest-dev/crowsnest/windows/spec"
)

// The sync-window suite: random and crafted AppProject windows, evaluated
// by Argo CD v3.6.1 (argoAt) and by crowsnest's windows package on the
// same instants. CONFORMANCE_SEED reproduces a run.

var windowZones = []string{"", "UTC", "Europe/Berlin", "America/New_York", "Australia/Lord_Howe",
	"Asia/Kathmandu", "Pacific/Chatham", "America/Santiago", "Europe/London", "Asia/Tokyo",
	"Asia/Kolkata", "Australia/Adelaide", "America/St_Johns", "Pacific/Auckland", "Africa/Cairo",
	"America/Sao_Paulo", "Asia/Tehran", "Europe/Dublin", "America/Los_Angeles", "Pacific/Apia",
	"America/Havana", "Antarctica/Troll", "Pacific/Kiritimati", "Asia/Gaza", "Europe/Moscow"}

// rarely generated: windows crowsnest refuses on purpose, or Argo CD too.
var oddZones = []string{"Nowhere/Land", "Local", "europe/berlin"}

var (
	minutes = []string{"0", "30", "*/15", "5,35", "59", "*", "0-10", "1-59/7", "45"}
	hours   = []string{"*", "2", "1-3", "0", "23", "*/6", "9-17", "1", "2,14", "3", "0-23/5"}
	doms    = []string{"*", "*", "*", "1", "15", "28-31", "*/10", "31", "29", "?"}
	months  = []string{"*", "*", "*", "3", "10,11", "*/2", "4-9", "JAN-MAR", "2"}
	dows    = []string{"*", "*", "*", "0", "1-5", "6", "sun", "MON-FRI", "5-6", "*/2"}
	// Argo CD cannot read these; crowsnest must refuse them in AppProjects.
	argoRefused = []string{"@daily", "@hourly", "@weekly", "@monthly", "@yearly", "0 0 * * 7",
		"0 22 * * 5-7", "0 0 * *", "61 * * * *", "0 0 * * * *", "* * * * mon-sun/0"}
	// crowsnest refuses these on purpose (allow-listed).
	crowsnestRefused = []string{"0 0 30 2 *", "0 0 31 4,6 *", "TZ=Europe/Berlin 0 22 * * *", "CRON_TZ=UTC 0 1 * * *"}
	globs            = []string{"*", "shop-*", "shop-?", "{shop,bill}*", "[a-s]*", "billing", "*-prod", "[!b]*",
		"https://*.example.com", "in-cluster", "prod", "team-*", "*shop*", "\\*", ""}
	appNames    = []string{"shop-1", "shop-a", "billing", "checkout-prod", "team-x", "*", "s", "zeta"}
	namespaces  = []string{"prod", "team-a", "shop-1", "default", ""}
	servers     = []string{"https://kubernetes.default.svc", "https://east.example.com", "https://a.b.example.com/x", ""}
	clusterName = []string{"in-cluster", "prod", "", "team-east"}
)

func seedFor(t *testing.T) uint64 {
	t.Helper()
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("CONFORMANCE_SEED"); s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("CONFORMANCE_SEED=%q: %v", s, err)
		}
		seed = v
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("reproduce with CONFORMANCE_SEED=%d", seed)
		}
	})
	return seed
}

func pickOne[T any](r *rand.Rand, xs []T) T { return xs[r.IntN(len(xs))] }

func genSchedule(r *rand.Rand, odd bool) string {
	if odd {
		switch r.IntN(3) {
		case 0:
			return pickOne(r, argoRefused)
		case 1:
			return pickOne(r, crowsnestRefused)
		}
	}
	return fmt.Sprintf("%s %s %s %s %s", pickOne(r, minutes), pickOne(r, hours), pickOne(r, doms), pickOne(r, months), pickOne(r, dows))
}

func genDuration(r *rand.Rand, odd bool) string {
	if odd && r.IntN(2) == 0 {
		return pickOne(r, []string{"1d", "0s", "-1h", "forever", "9000h", "", "2h30"})
	}
	switch r.IntN(4) {
	case 0:
		return fmt.Sprintf("%dm", 1+r.IntN(180))
	case 1:
		return fmt.Sprintf("%dh", 1+r.IntN(24*6))
	case 2:
		return fmt.Sprintf("%dh%dm%ds", r.IntN(72), r.IntN(60), r.IntN(60))
	default:
		return pickOne(r, []string{"1m", "1h", "24h", "25h", "48h", "168h", "90m", "59m", "61m", "23h59m"})
	}
}

func genGlobs(r *rand.Rand) []string {
	if r.IntN(2) == 0 {
		return nil
	}
	out := make([]string, 1+r.IntN(2))
	for i := range out {
		out[i] = pickOne(r, globs)
	}
	return out
}

func genWindow(r *rand.Rand, oddRate int) *argo.InlineSyncWindow {
	odd := r.IntN(oddRate) == 0
	w := &argo.InlineSyncWindow{
		Kind: pickOne(r, []string{"allow", "deny"}), Schedule: genSchedule(r, odd), Duration: genDuration(r, odd),
		Applications: genGlobs(r), Namespaces: genGlobs(r), Clusters: genGlobs(r),
		ManualSync: r.IntN(2) == 0, UseAndOperator: r.IntN(3) == 0, TimeZone: pickOne(r, windowZones),
	}
	if odd && r.IntN(4) == 0 {
		w.TimeZone = pickOne(r, oddZones)
	}
	if odd && r.IntN(8) == 0 {
		w.Kind = "block"
	}
	return w
}

func genWindowApp(r *rand.Rand) *argo.Application {
	a := &argo.Application{ObjectMeta: metav1.ObjectMeta{Name: pickOne(r, appNames), Namespace: "argocd"}}
	a.Spec.Project = "p"
	a.Spec.Destination = argo.ApplicationDestination{Server: pickOne(r, servers), Name: pickOne(r, clusterName), Namespace: pickOne(r, namespaces)}
	return a
}

func appRef(a *argo.Application) windows.AppRef {
	return windows.AppRef{Name: a.Name, Namespace: a.Namespace, Project: a.Spec.Project,
		DestNamespace: a.Spec.Destination.Namespace, DestServer: a.Spec.Destination.Server, DestName: a.Spec.Destination.Name}
}

func strs(xs []string) []any {
	out := make([]any, len(xs))
	for i, x := range xs {
		out[i] = x
	}
	return out
}

// project is the AppProject object crowsnest reads, holding ws unchanged.
func project(ws argo.SyncWindows) map[string]any {
	list := make([]any, 0, len(ws))
	for _, w := range ws {
		m := map[string]any{"kind": w.Kind, "schedule": w.Schedule, "duration": w.Duration,
			"manualSync": w.ManualSync, "andOperator": w.UseAndOperator, "timeZone": w.TimeZone}
		for k, v := range map[string][]string{"applications": w.Applications, "namespaces": w.Namespaces, "clusters": w.Clusters} {
			if v != nil {
				m[k] = strs(v)
			}
		}
		list = append(list, m)
	}
	return map[string]any{"metadata": map[string]any{"name": "p", "namespace": "argocd"},
		"spec": map[string]any{"syncWindows": list}}
}

// deliberate names the allow-listed difference a crowsnest refusal is, or
// "" if crowsnest refused for a reason Argo CD must share.
func deliberate(err error) string {
	var werr *windows.Error
	if !errors.As(err, &werr) {
		return ""
	}
	msg := werr.Err.Error()
	switch {
	case werr.Field == "timeZone":
		return "unknown-zone"
	case errors.Is(werr, spec.ErrNeverFires):
		return "never-fires"
	case werr.Field == "schedule" && strings.Contains(msg, "set the zone in timeZone"):
		return "schedule-zone-prefix"
	case werr.Field == "duration" && strings.Contains(msg, "must be positive and at most"):
		return "duration-out-of-range"
	case werr.Field == "kind":
		return "unknown-kind"
	case strings.HasPrefix(werr.Field, "applications[") || strings.HasPrefix(werr.Field, "namespaces[") ||
		strings.HasPrefix(werr.Field, "clusters["):
		return "invalid-pattern"
	}
	return ""
}

// compileOne compiles w as crowsnest reads it from an AppProject.
func compileOne(w *argo.InlineSyncWindow) (*windows.Window, string, error) {
	set, err := windows.FromAppProject(project(argo.SyncWindows{w}))
	if err != nil {
		return nil, deliberate(err), err
	}
	return set[0], "", nil
}

func allowListed(t *testing.T, id string) {
	t.Helper()
	for _, d := range windowDifferences {
		if d.ID == id {
			return
		}
	}
	t.Fatalf("crowsnest refusal classified %q, which is not in windowDifferences", id)
}

var (
	zoneCache sync.Map
	wallCron  = cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow)
)

func zone(name string) *time.Location {
	if l, ok := zoneCache.Load(name); ok {
		return l.(*time.Location)
	}
	l, err := time.LoadLocation(name)
	if err != nil {
		l = time.UTC
	}
	zoneCache.Store(name, l)
	return l
}

// instants picks the instants a window is checked at: random ones, the
// seconds around a start and an end (read on the wall clock of the zone,
// as the window names them) and around DST changes of the zone.
func instants(r *rand.Rand, w *argo.InlineSyncWindow, d time.Duration) []time.Time {
	lo := time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC).Unix()
	hi := time.Date(2090, 1, 1, 0, 0, 0, 0, time.UTC).Unix()
	rnd := func() time.Time { return time.Unix(lo+r.Int64N(hi-lo), 0) }
	out := []time.Time{rnd(), rnd(), rnd().Add(time.Duration(r.IntN(1e9))), rnd()}
	loc := zone(w.TimeZone)
	if sched, err := wallCron.Parse(w.Schedule); err == nil {
		base := rnd()
		wall := time.Date(base.Year(), base.Month(), base.Day(), base.Hour(), base.Minute(), 0, 0, time.UTC)
		if s := sched.Next(wall); !s.IsZero() {
			start := time.Date(s.Year(), s.Month(), s.Day(), s.Hour(), s.Minute(), 0, 0, loc)
			out = append(out, start, start.Add(-time.Second), start.Add(time.Second), start.Add(time.Nanosecond),
				start.Add(d), start.Add(d-time.Second), start.Add(d+time.Second), start.Add(d-time.Nanosecond))
		}
	}
	// The zone's next DST change after a random instant, and around it.
	if _, end := rnd().In(loc).ZoneBounds(); !end.IsZero() {
		out = append(out, end, end.Add(-time.Second), end.Add(time.Second), end.Add(-30*time.Minute),
			end.Add(30*time.Minute), end.Add(time.Duration(r.Int64N(int64(6*time.Hour)))-3*time.Hour))
	}
	return out
}

type windowCounts struct {
	cases, instants, refusedBoth, sentinel int
	skipped                                map[string]int
	zones                                  map[string]bool
}

// TestWindowActiveMatchesArgoCD compares, window by window and instant by
// instant, whether Argo CD and crowsnest find the window active, and that
// they refuse the same windows.
func TestWindowActiveMatchesArgoCD(t *testing.T) {
	seed := seedFor(t)
	r := rand.New(rand.NewPCG(seed, 1))
	n := 10000
	c := windowCounts{skipped: map[string]int{}, zones: map[string]bool{}}
	began := time.Now()
	for i := 0; i < n; i++ {
		w := genWindow(r, 10)
		if i < len(windowZones) { // every zone at least once
			w.TimeZone = windowZones[i]
		}
		c.cases++
		cw, id, cerr := compileOne(w)
		if id != "" {
			allowListed(t, id)
			c.skipped[id]++
			continue
		}
		d, _ := time.ParseDuration(w.Duration)
		for _, at := range instants(r, w, d) {
			got, aerr := argoActive(w, at)
			if errors.Is(aerr, errSentinelSlot) {
				c.sentinel++
				continue
			}
			if (aerr != nil) != (cerr != nil) {
				t.Fatalf("refusal differs: window %s\n  Argo CD error: %v\n  crowsnest error: %v", show(w), aerr, cerr)
			}
			if aerr != nil {
				c.refusedBoth++
				break
			}
			c.instants++
			c.zones[w.TimeZone] = true
			if mine := cw.Active(at); mine != got {
				t.Fatalf("active differs: window %s at %s (%s in its zone)\n  Argo CD: %v\n  crowsnest: %v",
					show(w), at.UTC().Format(time.RFC3339Nano), at.In(zone(w.TimeZone)).Format(time.RFC3339Nano), got, mine)
			}
		}
	}
	t.Logf("seed %d: %d windows, %d instants compared in %d zones, %d refused by both, %d instants in the sentinel slot, allow-listed skips %v, %s",
		seed, c.cases, c.instants, len(c.zones), c.refusedBoth, c.sentinel, c.skipped, time.Since(began).Round(time.Millisecond))
	if c.instants < 100000 || len(c.zones) < 20 {
		t.Errorf("coverage too small: %d instants in %d zones (want >= 100000 in >= 20)", c.instants, len(c.zones))
	}
}

// TestSyncDecisionMatchesArgoCD compares the automatic and manual sync
// decision for an Application under a project of several windows.
func TestSyncDecisionMatchesArgoCD(t *testing.T) {
	seed := seedFor(t)
	r := rand.New(rand.NewPCG(seed, 2))
	const n = 10000
	compared, skippedCases := 0, map[string]int{}
	began := time.Now()
	for range n {
		ws := make(argo.SyncWindows, 1+r.IntN(4))
		skip := ""
		for i := range ws {
			ws[i] = genWindow(r, 40)
			if _, id, err := compileOne(ws[i]); id == "" && err != nil {
				// Both refuse it (TestWindowActiveMatchesArgoCD checks that);
				// keep decisions to windows both read.
				ws[i].Schedule, ws[i].Duration = "0 22 * * *", "2h"
			}
			if _, id, _ := compileOne(ws[i]); id != "" {
				allowListed(t, id)
				skip = id
			}
		}
		if skip != "" {
			skippedCases[skip]++
			continue
		}
		set, err := windows.FromAppProject(project(ws))
		if err != nil {
			t.Fatalf("crowsnest refused %s: %v", showAll(ws), err)
		}
		app := genWindowApp(r)
		d, _ := time.ParseDuration(ws[0].Duration)
		for _, at := range instants(r, ws[r.IntN(len(ws))], d)[:4+r.IntN(6)] {
			for _, manual := range []bool{false, true} {
				want, aerr := argoAt(matched(ws, app), at, manual)
				if errors.Is(aerr, errSentinelSlot) {
					continue
				}
				if aerr != nil {
					t.Fatalf("Argo CD error for %s: %v", showAll(ws), aerr)
				}
				got := set.Decide(appRef(app), at, manual)
				if got.Allowed != want {
					t.Fatalf("decision differs (manual=%v) for app %s dest %+v at %s\nwindows %s\n  Argo CD allows: %v\n  crowsnest: %+v",
						manual, app.Name, app.Spec.Destination, at.UTC().Format(time.RFC3339Nano), showAll(ws), want, got)
				}
				compared++
			}
		}
	}
	t.Logf("seed %d: %d cases, %d decisions compared, allow-listed skips %v, %s", seed, n, compared, skippedCases, time.Since(began).Round(time.Millisecond))
}

func show(w *argo.InlineSyncWindow) string {
	return fmt.Sprintf("{kind: %s, schedule: %q, duration: %q, timeZone: %q, applications: %q, namespaces: %q, clusters: %q, andOperator: %v, manualSync: %v}",
		w.Kind, w.Schedule, w.Duration, w.TimeZone, w.Applications, w.Namespaces, w.Clusters, w.UseAndOperator, w.ManualSync)
}

func showAll(ws argo.SyncWindows) string {
	parts := make([]string, len(ws))
	for i, w := range ws {
		parts[i] = show(w)
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

func matched(ws argo.SyncWindows, app *argo.Application) argo.SyncWindows {
	if m := ws.Matches(app); m != nil {
		return *m
	}
	return nil
}
