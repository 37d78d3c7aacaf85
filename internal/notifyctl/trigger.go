package notifyctl

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/crowsnest-dev/crowsnest/triggers"
)

// ConditionRun is one condition of a trigger's dry run.
type ConditionRun struct {
	triggers.Result
	// Sends is whether a message would be sent.
	Sends bool
	// When is the condition's expression.
	When string
}

// RunTrigger evaluates every condition of trigger name on the Application
// of in.AppPath (and prevPath, the previously observed Application, when
// set) and says whether each would send, assuming a fresh state with no
// baseline.
func RunTrigger(in *Inputs, name, prevPath string) ([]ConditionRun, error) {
	n, _, err := in.Notifications()
	if err != nil {
		return nil, err
	}
	set, err := triggers.Compile(n)
	if err != nil {
		return nil, err
	}
	tr := set.Triggers[name]
	if tr == nil {
		return nil, fmt.Errorf("no trigger %q (known: %s)", name, strings.Join(sortedNames(set.Triggers), ", "))
	}
	app, err := readApp(in.AppPath)
	if err != nil {
		return nil, err
	}
	var prev map[string]any
	if prevPath != "" {
		if prev, err = readApp(prevPath); err != nil {
			return nil, err
		}
	}
	now := time.Now()
	results := triggers.Evaluate(tr, triggers.NewEnv(app, prev, in.event(), set.Config.Context, now))
	// The daemon sends what fired since its last observation: with
	// prevPath, that observation's results are the state the decision
	// starts from (a condition already true then, or a oncePer value
	// already sent, is not sent again).
	st := triggers.State{Seen: true}
	opts := triggers.StepOptions{App: "dry-run", Event: tr.OnEvent}
	if prev != nil && !tr.OnEvent {
		st, _ = triggers.Step(st, triggers.Evaluate(tr, triggers.NewEnv(prev, nil, nil, set.Config.Context, now)), opts)
	}
	_, sends := triggers.Step(st, results, opts)
	out := make([]ConditionRun, 0, len(results))
	for i, r := range results {
		out = append(out, ConditionRun{Result: r, When: tr.Conditions[i].When,
			Sends: slices.ContainsFunc(sends, func(s triggers.Send) bool { return s.Condition == r.Condition })})
	}
	return out, nil
}
