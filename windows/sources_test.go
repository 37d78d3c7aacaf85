package windows

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"

	"github.com/crowsnest-dev/crowsnest/config"
)

const appProject = `
apiVersion: argoproj.io/v1alpha1
kind: AppProject
metadata:
  name: payments
  namespace: argocd
spec:
  sourceRepos: ['*']
  syncWindows:
  - kind: deny
    schedule: '0 22 * * *'
    duration: 10h
    applications: ['*']
    manualSync: true
    timeZone: Europe/Berlin
    description: nightly freeze
    syncOverrun: true
  - kind: allow
    schedule: '30 9 * * 1-5'
    duration: 30m
    namespaces: ['pay-*']
    clusters: ['in-cluster']
    andOperator: true
`

func readObject(t *testing.T, doc string) map[string]any {
	t.Helper()
	var obj map[string]any
	if err := yaml.Unmarshal([]byte(doc), &obj); err != nil {
		t.Fatal(err)
	}
	return obj
}

func TestFromAppProject(t *testing.T) {
	set, err := FromAppProject(readObject(t, appProject))
	if err != nil {
		t.Fatal(err)
	}
	type view struct {
		Name, Project string
		Spec          config.SyncWindow
	}
	var got []view
	for _, w := range set {
		got = append(got, view{w.Name(), w.Project(), w.Spec()})
	}
	want := []view{
		{"AppProject argocd/payments spec.syncWindows[0]", "payments", config.SyncWindow{Kind: "deny", Schedule: "0 22 * * *",
			Duration: config.Duration{Duration: 10 * time.Hour}, Applications: []string{"*"}, ManualSync: true,
			TimeZone: "Europe/Berlin", Description: "nightly freeze"}},
		{"AppProject argocd/payments spec.syncWindows[1]", "payments", config.SyncWindow{Kind: "allow", Schedule: "30 9 * * 1-5",
			Duration: config.Duration{Duration: 30 * time.Minute}, Namespaces: []string{"pay-*"}, Clusters: []string{"in-cluster"},
			AndOperator: true}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("windows (-want +got):\n%s", diff)
	}

	// The project's windows govern only its own Applications, like Argo CD.
	mine := AppRef{Name: "checkout", Project: "payments", DestNamespace: "pay-eu", DestName: "in-cluster"}
	theirs := mine
	theirs.Project = "retail"
	at := time.Date(2026, 3, 2, 23, 0, 0, 0, time.UTC) // 00:00 in Berlin
	if d := set.Decide(mine, at, false); d.Allowed || d.Reason != ReasonDenyActive {
		t.Errorf("payments app: %+v, want denied by the nightly freeze", d)
	}
	if d := set.Decide(mine, at, true); !d.Allowed || d.Reason != ReasonDenyManualSync {
		t.Errorf("payments app, manual: %+v, want allowed through manualSync", d)
	}
	if d := set.Decide(theirs, at, false); !d.Allowed || d.Reason != ReasonNoWindows {
		t.Errorf("retail app: %+v, want no windows", d)
	}
	for _, w := range set {
		if !w.HoldsImageUpdates() || w.SyncOnOpen() {
			t.Errorf("%s: AppProject windows hold updates and do not start syncs", w)
		}
	}
}

func TestFromAppProjectErrors(t *testing.T) {
	tests := []struct {
		name      string
		doc       string
		wantNames []string // windows that compiled
		wantErr   string
	}{
		{name: "broken windows are named, the rest kept",
			doc: appProject + "  - kind: deny\n    schedule: '0 0 30 2 *'\n    duration: 1h\n" +
				"  - kind: deny\n    schedule: '@daily'\n    duration: forever\n    description: bad\n",
			wantNames: []string{"AppProject argocd/payments spec.syncWindows[0]", "AppProject argocd/payments spec.syncWindows[1]"},
			wantErr: "sync window AppProject argocd/payments spec.syncWindows[2]: schedule: invalid schedule \"0 0 30 2 *\": schedule can never fire (no month has such a day)\n" +
				"sync window AppProject argocd/payments spec.syncWindows[3] (\"bad\"): duration: invalid duration \"forever\""},
		{name: "wrong type", doc: "metadata: {name: p}\nspec:\n  syncWindows: {kind: deny}\n",
			wantErr: "reading AppProject spec.syncWindows:"},
		{name: "no name", doc: "spec: {syncWindows: []}\n", wantErr: "reading AppProject spec.syncWindows: metadata.name is empty"},
		{name: "no windows", doc: "metadata: {name: p}\nspec: {}\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			set, err := FromAppProject(readObject(t, tt.doc))
			if (err != nil) != (tt.wantErr != "") || (err != nil && !strings.HasPrefix(err.Error(), tt.wantErr)) {
				t.Fatalf("error = %v, want prefix %q", err, tt.wantErr)
			}
			var names []string
			for _, w := range set {
				names = append(names, w.Name())
			}
			if diff := cmp.Diff(tt.wantNames, names); diff != "" {
				t.Errorf("compiled windows (-want +got):\n%s", diff)
			}
		})
	}
}

func TestFromConfig(t *testing.T) {
	c, err := config.Parse([]byte("apiVersion: crowsnest.dev/v1alpha1\nkind: Config\nsyncWindows:\n" +
		"- {kind: deny, schedule: '0 22 * * *', duration: 1h, projects: ['*']}\n" +
		"- {kind: allow, schedule: '@weekly', duration: 7d, applications: [a], syncOnOpen: true}\n"))
	if err != nil {
		t.Fatal(err)
	}
	set, err := FromConfig(c.Windows)
	if err != nil || len(set) != 2 || set[1].Name() != "syncWindows[1]" || !set[1].SyncOnOpen() {
		t.Fatalf("FromConfig = %v, %v; want both windows, the second named syncWindows[1] with syncOnOpen", set, err)
	}
	bad := slices.Concat(c.Windows, []config.SyncWindow{{Kind: "deny", Schedule: "0 0 30 2 *", Duration: config.Duration{Duration: time.Hour}}})
	set, err = FromConfig(bad)
	var werr *Error
	if !errors.As(err, &werr) || werr.Window != "syncWindows[2]" || werr.Field != "schedule" || len(set) != 2 {
		t.Fatalf("FromConfig with a broken window = %d windows, %v; want 2 and an *Error for syncWindows[2].schedule", len(set), err)
	}
}
