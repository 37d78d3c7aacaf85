package triggers

import (
	"fmt"
	"time"

	"github.com/expr-lang/expr/vm"
)

// Result is one condition's outcome for one observation.
type Result struct {
	Trigger string
	// Condition is the index among the trigger's conditions (for people;
	// dedupe uses ConditionID).
	Condition   int
	ConditionID string
	Triggered   bool
	// OncePer is the oncePer value when triggered ("" without oncePer).
	OncePer string
	Send    []string
	// Err is an evaluation error (a helper failed, when returned a
	// non-boolean); the condition neither fires nor re-arms.
	Err error
}

// NewEnv builds the environment of one observation; now pins time.Now()
// (zero means the wall clock).
func NewEnv(app, prev, event map[string]any, context map[string]string, now time.Time) *Env {
	return &Env{App: app, Prev: prev, Event: event, Context: context, Time: newTimeFuncs(now)}
}

// Evaluate runs every condition of t against env.
func Evaluate(t *Trigger, env *Env) []Result {
	return EvaluateAppend(make([]Result, 0, len(t.Conditions)), t, env)
}

// EvaluateAppend is Evaluate appending to dst, so that the engine can
// reuse one slice for all triggers of an update.
func EvaluateAppend(dst []Result, t *Trigger, env *Env) []Result {
	var machine vm.VM
	for i := range t.Conditions {
		c := &t.Conditions[i]
		r := Result{Trigger: t.Name, Condition: i, ConditionID: c.ID, Send: c.Send}
		env.budget.Reset(evalLimits)
		v, err := machine.Run(c.when, env)
		if err != nil {
			r.Err = fmt.Errorf("trigger %s[%d].when: %w", t.Name, i, err)
		} else {
			switch b := v.(type) {
			case nil: // a missing field: false
			case bool:
				r.Triggered = b
			default:
				r.Err = fmt.Errorf("trigger %s[%d].when: want true or false, got %T", t.Name, i, v)
			}
		}
		if r.Triggered && c.oncePer != nil {
			env.budget.Reset(evalLimits)
			v, err := machine.Run(c.oncePer, env)
			if err != nil {
				r.Triggered, r.Err = false, fmt.Errorf("trigger %s[%d].oncePer: %w", t.Name, i, err)
			} else {
				r.OncePer = oncePerValue(v)
			}
		}
		dst = append(dst, r)
	}
	return dst
}

// oncePerValue prints a oncePer result as notifications-engine does
// (fmt's %v): a missing field is "<nil>", a value like any other, so a
// condition whose oncePer reads nothing fires once for it rather than
// each time it becomes true (Argo CD's catalog reads
// operationState?.syncResult?.revision, nil for a multi-source sync).
func oncePerValue(v any) string { return fmt.Sprintf("%v", v) }
