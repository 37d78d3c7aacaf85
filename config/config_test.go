package config

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

const header = "apiVersion: crowsnest.dev/v1alpha1\nkind: Config\n"

func TestParseErrorsNameTheField(t *testing.T) {
	tests := []struct {
		name string
		doc  string
		want []FieldError // Path, Line and a fragment of Msg
	}{
		{name: "unknown top-level key", doc: header + "watcher: {}\n",
			want: []FieldError{{Path: "watcher", Line: 3, Msg: `unknown field (did you mean "watch"?)`}}},
		{name: "unknown nested key", doc: header + "watch:\n  namspaces: [a]\n",
			want: []FieldError{{Path: "watch.namspaces", Line: 4, Msg: `did you mean "namespaces"?`}}},
		{name: "unknown key without a near name", doc: header + "frobnicate: 1\n",
			want: []FieldError{{Path: "frobnicate", Line: 3, Msg: "unknown field"}}},
		{name: "wrong type", doc: header + "controller:\n  workers: four\n",
			want: []FieldError{{Path: "controller.workers", Line: 4, Msg: `expected an integer, got string "four"`}}},
		{name: "list where a string belongs", doc: header + "watch:\n  selector: [a]\n",
			want: []FieldError{{Path: "watch.selector", Line: 4, Msg: "expected a string, got a list"}}},
		{name: "number where a string belongs", doc: header + "watch:\n  namespaces: [argocd, 42]\n",
			want: []FieldError{{Path: "watch.namespaces[1]", Line: 4, Msg: "expected a string, got integer 42"}}},
		{name: "bad duration", doc: header + "leaderElection:\n  leaseDuration: 15 parsecs\n",
			want: []FieldError{{Path: "leaderElection.leaseDuration", Line: 4, Msg: `invalid duration "15 parsecs"`}}},
		{name: "duration without unit", doc: header + "controller:\n  retryMaxDelay: 300\n",
			want: []FieldError{{Path: "controller.retryMaxDelay", Line: 4, Msg: "add a unit"}}},
		{name: "missing apiVersion", doc: "kind: Config\n",
			want: []FieldError{{Path: "apiVersion", Msg: "required"}}},
		{name: "wrong kind", doc: "apiVersion: crowsnest.dev/v1alpha1\nkind: Configuration\n",
			want: []FieldError{{Path: "kind", Line: 2, Msg: `unsupported value "Configuration"`}}},
		{name: "missing lease namespace", doc: header + "leaderElection:\n  enabled: true\n",
			want: []FieldError{{Path: "leaderElection.leaseNamespace", Line: 3, Msg: "required when leaderElection.enabled is true"}}},
		{name: "invalid selector", doc: header + "watch:\n  selector: 'team in (a'\n",
			want: []FieldError{{Path: "watch.selector", Line: 4, Msg: "invalid label selector"}}},
		{name: "invalid namespace", doc: header + "watch:\n  namespaces: [argocd, Bad_NS]\n",
			want: []FieldError{{Path: "watch.namespaces[1]", Line: 4, Msg: `invalid namespace "Bad_NS"`}}},
		{name: "workers out of range", doc: header + "controller:\n  workers: 1000\n",
			want: []FieldError{{Path: "controller.workers", Line: 4, Msg: "must be between 1 and 256, got 1000"}}},
		{name: "renew deadline not below lease duration", doc: header + "leaderElection:\n  leaseDuration: 10s\n  renewDeadline: 10s\n",
			want: []FieldError{{Path: "leaderElection.renewDeadline", Line: 5, Msg: "must be less than leaseDuration"}}},
		{name: "duplicate key", doc: header + "log:\n  level: info\n  level: debug\n",
			want: []FieldError{{Path: "log.level", Line: 5, Msg: "duplicate key"}}},
		{name: "empty file", doc: "",
			want: []FieldError{{Msg: "empty config"}}},
		{name: "not a mapping", doc: "- a\n- b\n",
			want: []FieldError{{Line: 1, Msg: "expected a mapping at the top level, got a list"}}},
		{name: "not YAML", doc: "a: [\n",
			want: []FieldError{{Msg: "not valid YAML"}}},
		{name: "every problem at once, none about a field that failed to decode",
			doc: header + "watch:\n  namspaces: [a]\ncontroller:\n  workers: four\nlog: {level: loud, format: xml}\n",
			want: []FieldError{
				{Path: "watch.namspaces", Line: 4, Msg: "unknown field"},
				{Path: "controller.workers", Line: 6, Msg: "expected an integer"},
				{Path: "log.level", Line: 7, Msg: `unsupported value "loud"`},
				{Path: "log.format", Line: 7, Msg: `unsupported value "xml"`},
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Parse([]byte(tt.doc))
			if err == nil {
				t.Fatalf("Parse() = %+v, want an error", c)
			}
			got := gotFieldErrors(t, err, tt.want)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("errors (-want +got):\n%s\nfull error:\n%v", diff, err)
			}
		})
	}
}

func TestParseDefaultsAndValues(t *testing.T) {
	got, err := Parse([]byte(header + "watch:\n  namespaces: [argocd, apps]\n  resyncPeriod: 0\n  appProjects: false\n" +
		"controller:\n  retryMaxDelay: 1d12h\n  kubeQPS: 20\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := Default()
	want.Watch.Namespaces = []string{"argocd", "apps"}
	want.Watch.ResyncPeriod = &Duration{0}
	f := false
	want.Watch.AppProjects = &f
	want.Controller.RetryMaxDelay = Duration{36 * time.Hour}
	want.Controller.KubeQPS = 20
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("config (-want +got):\n%s", diff)
	}
	if got.Watch.WatchAppProjects() {
		t.Error("appProjects: false not honoured")
	}
	if !Default().Watch.WatchAppProjects() || Default().Watch.ResyncPeriod.Duration != DefaultResyncPeriod {
		t.Error("defaults: want AppProjects watched and a 10m resync")
	}
	if err := Default().Validate(); err != nil {
		t.Errorf("Default() is invalid: %v", err)
	}
}

func TestParseDuration(t *testing.T) {
	tests := []struct {
		in      string
		want    time.Duration
		wantErr bool
	}{
		{in: "90s", want: 90 * time.Second},
		{in: "1h30m", want: 90 * time.Minute},
		{in: "7d", want: 7 * 24 * time.Hour},
		{in: "1d12h", want: 36 * time.Hour},
		{in: "0", want: 0},
		{in: "d", wantErr: true},
		{in: "1.5d", wantErr: true},
		{in: "3days", wantErr: true},
		{in: "1d-2h", wantErr: true},
		{in: "forever", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseDuration(tt.in)
			if (err != nil) != tt.wantErr {
				t.Fatalf("ParseDuration(%q) error = %v, wantErr %v", tt.in, err, tt.wantErr)
			}
			if err == nil && got.Duration != tt.want {
				t.Errorf("ParseDuration(%q) = %s, want %s", tt.in, got, tt.want)
			}
		})
	}
}

func TestExampleConfigIsValidAndComplete(t *testing.T) {
	c, err := Load("../examples/config/crowsnest.yaml")
	if err != nil {
		t.Fatal(err)
	}
	// The example documents every key with its default value, apart from
	// the lease namespace it fills in.
	want := Default()
	want.Watch.Namespaces = []string{}
	tr := true
	want.Watch.AppProjects = &tr
	want.LeaderElection.LeaseNamespace = "argocd"
	if diff := cmp.Diff(want, c); diff != "" {
		t.Errorf("example differs from the defaults (-defaults +example):\n%s", diff)
	}
}

func TestLoadNamesThePath(t *testing.T) {
	path := t.TempDir() + "/crowsnest.yaml"
	if err := os.WriteFile(path, []byte(header+"log: {level: loud}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := Load(path)
	if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "log.level") {
		t.Errorf("Load() error = %v, want one naming the file and the field", err)
	}
}
