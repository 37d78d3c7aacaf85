package triggers

import (
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/crowsnest-dev/crowsnest/config"
)

func TestBaselineOff(t *testing.T) {
	s := catalogSet(t)
	_, sends := observe(s, State{}, loadApp(t, "healthy"), nil, StepOptions{App: "a", Baseline: false})
	if diff := cmp.Diff([]string{"on-created", "on-deployed", "on-sync-succeeded"}, sentTriggers(sends)); diff != "" {
		t.Errorf("first sight without baseline (-want +got):\n%s", diff)
	}
	st, sends := observe(s, State{}, loadApp(t, "healthy"), nil, StepOptions{App: "a", Baseline: true})
	if len(sends) != 0 || !st.Seen || len(st.Fired) != 3 {
		t.Errorf("baseline: sends %v, state %+v; want none sent and 3 recorded", sends, st)
	}
}

func TestEventsNeitherBaselineNorEndFirstSight(t *testing.T) {
	s := catalogSet(t)
	app := loadApp(t, "healthy")
	ev := (&Event{Type: EventImageUpdated, ID: "e1"}).Map()
	var results []Result
	for _, tr := range s.Triggers {
		if tr.OnEvent {
			results = append(results, Evaluate(tr, NewEnv(app, app, ev, nil, fixedNow))...)
		}
	}
	st, sends := Step(State{}, results, StepOptions{App: "a", Baseline: true, Event: true})
	if diff := cmp.Diff([]string{"on-image-updated"}, sentTriggers(sends)); diff != "" {
		t.Errorf("event sends (-want +got):\n%s", diff)
	}
	if st.Seen {
		t.Error("an event ended the Application's first sight")
	}
	if _, again := Step(st, results, StepOptions{App: "a", Event: true}); len(again) != 0 {
		t.Errorf("the same event was sent twice: %v", again)
	}
}

// TestDedupeKeysAreStable checks that a condition's keys survive edits of
// templates, send lists, descriptions, other conditions and other
// triggers, and change only with its own expressions.
func TestDedupeKeysAreStable(t *testing.T) {
	base := &config.Notifications{
		Triggers: map[string][]config.Condition{
			"on-deployed": {{When: "app.status.health.status == 'Healthy'", OncePer: "app.status.sync.revision", Send: []string{"a"}}},
		},
		Templates: map[string]config.Template{"a": {Message: "a"}, "b": {Message: "b {{.app.metadata.name}}"}},
	}
	edited := &config.Notifications{
		Triggers: map[string][]config.Condition{
			"on-deployed": {
				{When: "app.status.sync.status == 'Unknown'", Send: []string{"b"}}, // a new condition first
				{When: " app.status.health.status == 'Healthy'\n", OncePer: "app.status.sync.revision", Send: []string{"b", "a"}, Description: "new"},
			},
			"on-other": {{When: "true", Send: []string{"a"}}},
		},
		Templates: map[string]config.Template{"a": {Message: "changed"}, "b": {Message: "b"}},
	}
	keys := func(n *config.Notifications) map[string]bool {
		s, err := Compile(n)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]bool{}
		res := Evaluate(s.Triggers["on-deployed"], NewEnv(loadApp(t, "healthy"), nil, nil, nil, fixedNow))
		_, sends := Step(State{}, res, StepOptions{App: "uid-1"})
		for _, snd := range sends {
			out[snd.Key] = true
		}
		return out
	}
	before, after := keys(base), keys(edited)
	for k := range before {
		if !after[k] {
			t.Errorf("key %s of the unchanged condition changed after unrelated edits (before %v, after %v)", k, before, after)
		}
	}
	changed := &config.Notifications{
		Triggers: map[string][]config.Condition{
			"on-deployed": {{When: "app.status.health.status == 'Healthy'", OncePer: "app.status.sync.revision + 'x'", Send: []string{"a"}}},
		},
		Templates: base.Templates,
	}
	for k := range keys(changed) {
		if before[k] {
			t.Errorf("key %s unchanged although oncePer changed", k)
		}
	}
}

func TestStateIsBounded(t *testing.T) {
	tr, err := CompileTrigger("t", []config.Condition{
		{When: "true", Send: []string{"x"}},
		{When: "true", OncePer: "event.id", Send: []string{"x"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	var st State
	var level string
	for i := range 50 {
		res := Evaluate(tr, NewEnv(nil, nil, map[string]any{"id": i}, nil, fixedNow))
		var sends []Send
		st, sends = Step(st, res, StepOptions{App: "a", MaxKeys: 8})
		if i == 0 {
			level = "L" + sends[0].Key
		} else if len(sends) != 1 || sends[0].Condition != 1 {
			t.Fatalf("update %d: sends %+v, want the oncePer condition only", i, sends)
		}
	}
	if len(st.Fired) != 8 || !slices.Contains(st.Fired, level) {
		t.Errorf("state %v: want 8 keys keeping the level key %s", st.Fired, level)
	}
}
