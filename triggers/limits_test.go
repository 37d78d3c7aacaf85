package triggers

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/crowsnest-dev/crowsnest/config"
)

// appWithResources is an Application of n resources, as big ones are.
func appWithResources(n int) map[string]any {
	res := make([]any, n)
	for i := range res {
		res[i] = map[string]any{"kind": "Deployment", "name": fmt.Sprintf("web-%d", i), "status": "Synced",
			"health": map[string]any{"status": "Healthy"}}
	}
	return map[string]any{"metadata": map[string]any{"name": "shop"}, "status": map[string]any{"resources": res}}
}

// doubling is `let v1 = seed; let v2 = v1 OP v1; ...` n times, then use
// applied to the last.
func doubling(seed, op string, n int, use string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "let v0 = %s; ", seed)
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "let v%d = %s; ", i, strings.NewReplacer("A", fmt.Sprintf("v%d", i-1)).Replace(op))
	}
	return b.String() + strings.ReplaceAll(use, "V", fmt.Sprintf("v%d", n))
}

// Each hostile condition fails that evaluation with ErrEvalBudget and an
// error naming the limit, after allocating well under 64 MiB. Without the
// limits each ran for seconds or built MiBs it should not have, and the
// doubled map ran out of 8 GiB of memory.
func TestHostileConditionsAreBounded(t *testing.T) {
	app := appWithResources(1000)
	tests := []struct {
		name, when, wantErr string
	}{
		{name: "nested loops over a list", when: `let a = split(repeat("a,", 300), ","); all(a, {all(a, {all(a, {# != "b"})})})`,
			wantErr: "more than 100000 closure runs"},
		{name: "nested loops over the Application", when: `all(app.status.resources, {all(app.status.resources, {#.status == "Synced"})})`,
			wantErr: "more than 100000 closure runs"},
		{name: "a string growing in reduce", when: `len(reduce(1..5000, #acc + "` + strings.Repeat("x", 100) + `", "")) > 0`,
			wantErr: "built more than 32 MiB of values"},
		{name: "a string doubled", when: doubling(`repeat("x", 1000)`, "A + A", 12, "len(V) > 0"),
			wantErr: "a string, list or map of more than 2 MiB"},
		{name: "a list doubled and encoded", when: doubling("[1]", "[A, A]", 23, "len(toJSON(V)) > 0"),
			wantErr: "a string, list or map of more than 2 MiB"},
		{name: "a list doubled and printed", when: doubling("[1]", "[A, A]", 23, "len(string(V)) > 0"),
			wantErr: "a string, list or map of more than 2 MiB"},
		{name: "a map doubled", when: doubling("{'a': 1}", "{'a': A, 'b': A}", 23, "len(toJSON(V)) > 0"),
			wantErr: "a string, list or map of more than 2 MiB"},
		{name: "replace between every character", when: `len(replace(repeat("a", 9000), "", repeat("b", 900))) > 0`,
			wantErr: "replace: a result of 8109900 bytes, more than 2 MiB"},
		{name: "strings.ReplaceAll between every character", when: `len(strings.ReplaceAll(repeat("a", 9000), "", repeat("b", 900))) > 0`,
			wantErr: "replace: a result of 8109900 bytes, more than 2 MiB"},
		{name: "join with a long separator", when: `len(join(split(repeat("a,", 5000), ","), repeat("x", 900))) > 0`,
			wantErr: "join: a result of 4505000 bytes, more than 2 MiB"},
		{name: "strings.Join with a long separator", when: `len(strings.Join(map(app.status.resources, {#.name}), repeat("x", 3000))) > 0`,
			wantErr: "join: a result of 3003890 bytes, more than 2 MiB"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr, err := CompileTrigger("t", []config.Condition{{When: tt.when, Send: []string{"x"}}})
			if err != nil {
				t.Fatal(err)
			}
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			r := Evaluate(tr, NewEnv(app, nil, nil, nil, fixedNow))[0]
			runtime.ReadMemStats(&after)
			if !errors.Is(r.Err, ErrEvalBudget) || !strings.Contains(r.Err.Error(), tt.wantErr) {
				t.Fatalf("Err = %v, want ErrEvalBudget saying %q", r.Err, tt.wantErr)
			}
			if r.Triggered {
				t.Error("a condition over its budget fired")
			}
			if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 64<<20 {
				t.Errorf("the evaluation allocated %d MiB, want under 64 MiB", alloc>>20)
			}
		})
	}
}

// Conditions as people write them, over an Application of 5,000
// resources, evaluate as before; each expression has a budget of its own,
// so many conditions over the same Application do not add up.
func TestRealConditionsFitTheBudget(t *testing.T) {
	app := appWithResources(5000)
	conds := []config.Condition{
		{When: `all(app.status.resources, {#.health.status == "Healthy"})`, OncePer: `join(map(filter(app.status.resources, {#.kind == "Deployment"}), {#.name}), ",")`},
		{When: `len(filter(app.status.resources, {#.status != "Synced"})) == 0 and any(app.status.resources, {#.name == "web-4999"})`},
		{When: `replace(app.metadata.name, "o", "0") + "-" + strings.Join(["a", "b"], "/") == "sh0p-a/b"`},
		{When: `strings.ReplaceAll("a.b.c", ".", "::") == "a::b::c" and strings.Replace("aaa", "a", "b", 2) == "bba" and join(["x"]) == "x"`},
		{When: `sum(map(app.status.resources, {len(#.name)})) > 0 and {"k": app.metadata.name}.k == "shop" and [app.metadata.name][0] == "shop"`},
	}
	for range 3 {
		conds = append(conds, conds[0])
	}
	tr, err := CompileTrigger("t", conds)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range Evaluate(tr, NewEnv(app, nil, nil, nil, fixedNow)) {
		if r.Err != nil || !r.Triggered {
			t.Errorf("condition %d: Triggered %v, Err %v; want it to fire", i, r.Triggered, r.Err)
		}
		if i == 0 && !strings.HasSuffix(r.OncePer, ",web-4999") {
			t.Errorf("oncePer ...%s, want the Deployments' names", r.OncePer[max(len(r.OncePer)-20, 0):])
		}
	}
}

// BenchmarkHostileCondition evaluates the costliest hostile condition to
// the point where it fails: what one bad trigger costs per update.
func BenchmarkHostileCondition(b *testing.B) {
	tr, err := CompileTrigger("t", []config.Condition{{When: `let a = split(repeat("a,", 300), ","); all(a, {all(a, {all(a, {# != "b"})})})`, Send: []string{"x"}}})
	if err != nil {
		b.Fatal(err)
	}
	env := NewEnv(appWithResources(10), nil, nil, nil, fixedNow)
	b.ReportAllocs()
	for b.Loop() {
		if r := Evaluate(tr, env)[0]; !errors.Is(r.Err, ErrEvalBudget) {
			b.Fatal(r.Err)
		}
	}
}
