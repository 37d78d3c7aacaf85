package config

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestParseSyncWindows(t *testing.T) {
	got, err := Parse([]byte(header + `syncWindows:
- kind: deny
  schedule: "0 22 * * 5"
  duration: 2d12h
  timeZone: Europe/Berlin
  applications: ["shop-*"]
  clusters: ["https://*.prod.example.com"]
  andOperator: true
  manualSync: true
  description: weekend freeze
- kind: allow
  schedule: "@daily"
  duration: 1h
  projects: [payments]
  labelSelector: tier in (web, api)
  holdImageUpdates: false
  syncOnOpen: true
`))
	if err != nil {
		t.Fatal(err)
	}
	f := false
	want := []SyncWindow{
		{Kind: WindowDeny, Schedule: "0 22 * * 5", Duration: Duration{60 * time.Hour}, TimeZone: "Europe/Berlin",
			Applications: []string{"shop-*"}, Clusters: []string{"https://*.prod.example.com"}, AndOperator: true,
			ManualSync: true, Description: "weekend freeze"},
		{Kind: WindowAllow, Schedule: "@daily", Duration: Duration{time.Hour}, Projects: []string{"payments"},
			LabelSelector: "tier in (web, api)", HoldImageUpdates: &f, SyncOnOpen: true},
	}
	if diff := cmp.Diff(want, got.Windows); diff != "" {
		t.Errorf("windows (-want +got):\n%s", diff)
	}
	if !got.Windows[0].HoldsImageUpdates() || got.Windows[1].HoldsImageUpdates() {
		t.Error("holdImageUpdates: want the default true and an explicit false honoured")
	}
}

func TestSyncWindowErrorsNameTheField(t *testing.T) {
	const ok = "- kind: deny\n  schedule: '0 22 * * *'\n  duration: 1h\n  applications: ['*']\n"
	tests := []struct {
		name string
		doc  string
		want []FieldError // Path, Line and a fragment of Msg
	}{
		{name: "never fires", doc: "- kind: deny\n  schedule: '0 0 30 2 *'\n  duration: 1h\n  applications: ['*']\n",
			want: []FieldError{{Path: "syncWindows[0].schedule", Line: 5, Msg: "can never fire"}}},
		{name: "bad cron", doc: "- kind: deny\n  schedule: '0 25 * * *'\n  duration: 1h\n  namespaces: [a]\n",
			want: []FieldError{{Path: "syncWindows[0].schedule", Line: 5, Msg: "above maximum"}}},
		{name: "missing schedule and duration", doc: "- kind: allow\n  projects: [a]\n",
			want: []FieldError{
				{Path: "syncWindows[0].schedule", Line: 4, Msg: "required"},
				{Path: "syncWindows[0].duration", Line: 4, Msg: "must be positive"},
			}},
		{name: "zero duration", doc: "- kind: deny\n  schedule: '@daily'\n  duration: 0s\n  projects: [a]\n",
			want: []FieldError{{Path: "syncWindows[0].duration", Line: 6, Msg: "must be positive (e.g. 1h or 7d), got 0s"}}},
		{name: "negative duration", doc: "- kind: deny\n  schedule: '@daily'\n  duration: -1h\n  projects: [a]\n",
			want: []FieldError{{Path: "syncWindows[0].duration", Line: 6, Msg: "must be positive"}}},
		{name: "too long", doc: "- kind: deny\n  schedule: '@daily'\n  duration: 400d\n  projects: [a]\n",
			want: []FieldError{{Path: "syncWindows[0].duration", Line: 6, Msg: "must be at most 8784h0m0s"}}},
		{name: "unknown zone", doc: "- kind: deny\n  schedule: '@daily'\n  duration: 1h\n  timeZone: Europe/Atlantis\n  projects: [a]\n",
			want: []FieldError{{Path: "syncWindows[0].timeZone", Line: 7, Msg: `unknown time zone "Europe/Atlantis"`}}},
		{name: "bad kind", doc: "- kind: Deny\n  schedule: '@daily'\n  duration: 1h\n  projects: [a]\n",
			want: []FieldError{{Path: "syncWindows[0].kind", Line: 4, Msg: `unsupported value "Deny"`}}},
		{name: "no selector", doc: "- kind: deny\n  schedule: '@daily'\n  duration: 1h\n",
			want: []FieldError{{Path: "syncWindows[0]", Line: 4, Msg: "no selector"}}},
		{name: "bad glob", doc: "- kind: deny\n  schedule: '@daily'\n  duration: 1h\n  clusters: [ok, 'prod-[1']\n",
			want: []FieldError{{Path: "syncWindows[0].clusters[1]", Line: 7, Msg: "unclosed ["}}},
		{name: "bad label selector", doc: "- kind: deny\n  schedule: '@daily'\n  duration: 1h\n  labelSelector: 'a in (b'\n",
			want: []FieldError{{Path: "syncWindows[0].labelSelector", Line: 7, Msg: "invalid label selector"}}},
		{name: "syncOnOpen on a deny window", doc: ok + "  syncOnOpen: true\n",
			want: []FieldError{{Path: "syncWindows[0].syncOnOpen", Line: 8, Msg: "only allow windows"}}},
		{name: "second window named by index", doc: ok + "- kind: deny\n  schedule: '@daily'\n  duration: 1\n  projects: [a]\n",
			want: []FieldError{{Path: "syncWindows[1].duration", Line: 10, Msg: "add a unit"}}},
		{name: "unknown key", doc: "- kind: deny\n  schedule: '@daily'\n  duration: 1h\n  project: [a]\n",
			want: []FieldError{
				{Path: "syncWindows[0].project", Line: 7, Msg: `did you mean "projects"?`},
				{Path: "syncWindows[0]", Line: 4, Msg: "no selector"},
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			doc := header + "syncWindows:\n" + tt.doc
			c, err := Parse([]byte(doc))
			if err == nil {
				t.Fatalf("Parse() = %+v, want an error", c.Windows)
			}
			got := gotFieldErrors(t, err, tt.want)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("errors (-want +got):\n%s\nfull error:\n%v", diff, err)
			}
		})
	}
}

// The example config documents sync windows in a commented block (there are
// none by default); uncommented, the block must load.
func TestExampleSyncWindowsLoad(t *testing.T) {
	block := commentedExample(t, "syncWindows")
	c, err := Parse([]byte(header + block))
	if err != nil {
		t.Fatalf("example sync windows:\n%s\n%v", block, err)
	}
	var got []string
	for _, w := range c.Windows {
		got = append(got, w.Kind+" "+w.Description)
	}
	if diff := cmp.Diff([]string{"deny weekend freeze", "allow nightly deploys"}, got); diff != "" {
		t.Errorf("example windows (-want +got):\n%s", diff)
	}
}
