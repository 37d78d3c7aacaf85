package triggers

import (
	"testing"

	"github.com/crowsnest-dev/crowsnest/config"
)

// A oncePer that reads a missing field is the value "<nil>", as in
// notifications-engine (fmt's %v), not "no oncePer": Argo CD's
// on-health-degraded fires once per revision, and once for an
// Application with no synced revision, not each time it degrades again.
func TestOncePerNilIsAValue(t *testing.T) {
	tr, err := CompileTrigger("on-health-degraded", []config.Condition{{
		When: "app.status.health.status == 'Degraded'", OncePer: "app.status.operationState?.syncResult?.revision", Send: []string{"x"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	app := func(health string) map[string]any {
		return map[string]any{"status": map[string]any{"health": map[string]any{"status": health}}}
	}
	var st State
	var sent int
	for _, h := range []string{"Degraded", "Healthy", "Degraded"} {
		res := Evaluate(tr, NewEnv(app(h), nil, nil, nil, fixedNow))
		if res[0].Triggered && res[0].OncePer != "<nil>" {
			t.Errorf("oncePer = %q, want <nil>", res[0].OncePer)
		}
		var sends []Send
		st, sends = Step(st, res, StepOptions{App: "a"})
		sent += len(sends)
	}
	if sent != 1 {
		t.Errorf("sent %d times, want once", sent)
	}
}
