package triggers

import (
	"os"
	"path/filepath"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/crowsnest-dev/crowsnest/config"
)

// loadApp reads an Application fixture from testdata/apps as the watcher
// hands it over: JSON-typed maps.
func loadApp(tb testing.TB, name string) map[string]any {
	tb.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "apps", name+".yaml"))
	if err != nil {
		tb.Fatal(err)
	}
	var obj map[string]any
	if err := yaml.Unmarshal(data, &obj); err != nil {
		tb.Fatalf("%s: %v", name, err)
	}
	return obj
}

// catalogSet compiles the catalog alone.
func catalogSet(tb testing.TB) *Set {
	tb.Helper()
	s, err := Compile(&config.Notifications{Catalog: true})
	if err != nil {
		tb.Fatalf("compiling the catalog: %v", err)
	}
	return s
}

// appTriggers returns the set's triggers about Application state, sorted.
func appTriggers(s *Set) []*Trigger {
	var out []*Trigger
	for _, name := range sortedNames(s.Triggers) {
		if t := s.Triggers[name]; !t.OnEvent {
			out = append(out, t)
		}
	}
	return out
}

// observe evaluates every Application trigger for one update and steps
// the state, as the engine does.
func observe(s *Set, st State, app, prev map[string]any, opt StepOptions) (State, []Send) {
	env := NewEnv(app, prev, nil, nil, fixedNow)
	var results []Result
	for _, t := range appTriggers(s) {
		results = append(results, Evaluate(t, env)...)
	}
	return Step(st, results, opt)
}

func sentTriggers(sends []Send) []string {
	out := []string{}
	for _, s := range sends {
		out = append(out, s.Trigger)
	}
	return out
}
