package triggers

import (
	"errors"
	"strings"
	"testing"

	"github.com/crowsnest-dev/crowsnest/config"
)

func FuzzParseSubscriptions(f *testing.F) {
	for _, seed := range [][2]string{
		{"notifications.argoproj.io/subscribe.on-deployed.slack", "a;b"},
		{"notifications.argoproj.io/subscribe.slack", ""},
		{"notifications.argoproj.io/subscribe..", ";;,"},
		{"notifications.argoproj.io/subscriptions", "- trigger: on-x\n  destinations: [{service: slack, recipients: [a]}]"},
		{"notifications.argoproj.io/subscriptions", "- trigger: [a, b]\n  destinations: [{service: ''}]"},
		{"notifications.argoproj.io/subscriptions", "&a [*a]"},
		{"notifications.argoproj.io/subscriptions", "{}"},
	} {
		f.Add(seed[0], seed[1])
	}
	f.Fuzz(func(t *testing.T, key, value string) {
		subs, err := ParseSubscriptions(map[string]string{key: value})
		if err != nil {
			if !strings.Contains(err.Error(), "annotation "+key) {
				t.Fatalf("error %q does not name the annotation %q", err, key)
			}
			return
		}
		for _, s := range subs {
			if !validName(s.Service) || (s.Trigger != "" && !validName(s.Trigger)) {
				t.Fatalf("accepted invalid names: %+v", s)
			}
			for _, r := range s.Recipients {
				if key != SubscriptionsAnnotation && (r == "" || strings.ContainsAny(r, ";,")) {
					t.Fatalf("recipient %q not split or trimmed", r)
				}
			}
		}
		r, err := NewResolver(&config.Notifications{DefaultTriggers: []string{"on-x"}})
		if err != nil {
			t.Fatal(err)
		}
		_ = r.Destinations("on-x", nil, subs)
	})
}

func FuzzEvaluate(f *testing.F) {
	for _, seed := range []string{
		"app.status.operationState.phase in ['Error', 'Failed']",
		"app.status.health.status == 'Healthy' and prev.status.health.status != 'Healthy'",
		"time.Now().Sub(time.Parse(app.status.operationState.startedAt)).Minutes() > 5",
		"strings.Contains(strings.ToLower(app.metadata.name), 'sh')",
		"len(app.status.conditions) > 0", "app.spec.sources[5].x", "1/0 > 1", "nil", "event.id",
		"app ?? prev", "[1,2][7] == 1", "repo.RepoURLToHTTPS(app.spec.source.repoURL) != ''",
		// the evaluation budget's rewrite: closures, +, lists, maps, join and replace
		`let a = split(repeat("a,", 100), ","); all(a, {any(a, {# + "x" == "ax"})})`,
		`let b = [app.metadata.name, {"k": [1, app]}]; len(toJSON(b + b)) > 0 and join(["a"], "-") == replace("a", "b", "c")`,
		`reduce(1..3, #acc + string(#), "") == "123"`,
	} {
		f.Add(seed, "app.status.sync.revision")
	}
	fixtures := []string{"created", "running", "healthy", "deleted"}
	apps := make([]map[string]any, len(fixtures))
	for i, name := range fixtures {
		apps[i] = loadApp(f, name)
	}
	f.Fuzz(func(t *testing.T, when, oncePer string) {
		tr, err := CompileTrigger("f", []config.Condition{{When: when, OncePer: oncePer, Send: []string{"x"}}})
		if err != nil {
			var ce *CompileError
			if !errors.As(err, &ce) || ce.Trigger != "f" {
				t.Fatalf("compile error %v is not a *CompileError naming the trigger", err)
			}
			return
		}
		var st State
		for i, app := range apps {
			var prev map[string]any
			if i > 0 {
				prev = apps[i-1]
			}
			res := Evaluate(tr, NewEnv(app, prev, nil, nil, fixedNow))
			var sends []Send
			st, sends = Step(st, res, StepOptions{App: "a"})
			if len(sends) > len(res) {
				t.Fatalf("%d sends from %d results", len(sends), len(res))
			}
			// The same observation again never sends.
			if _, again := Step(st, res, StepOptions{App: "a"}); len(again) > 0 {
				t.Fatalf("repeated observation sent %+v", again)
			}
		}
	})
}
