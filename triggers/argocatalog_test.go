package triggers

import (
	"testing"
	"time"

	"github.com/crowsnest-dev/crowsnest/config"
)

// argoOnDeployed is the condition of on-deployed in Argo CD v3.6.1's
// notifications catalog (notifications_catalog/install.yaml), verbatim: it
// uses time.Minute and optional chaining.
const argoOnDeployed = `app.status.operationState != nil and app.status.operationState.phase in ['Succeeded']
  and app.status.health.status == 'Healthy' and (!time.Parse(app.status.health.lastTransitionTime).Add(1
  * time.Minute).Before(time.Parse(app.status.operationState.finishedAt)) or time.Parse(app.status.health.lastTransitionTime).Before(time.Parse(app.status.operationState.startedAt)))`

// Argo CD's own on-deployed trigger compiles and decides as Argo CD's
// expression environment (util/notification/expression/time) does: the
// duration and layout constants of `time` are there.
func TestArgoCDOnDeployedCondition(t *testing.T) {
	tr, err := CompileTrigger("on-deployed", []config.Condition{{
		When: argoOnDeployed, OncePer: "app.status.operationState?.syncResult?.revision", Send: []string{"app-deployed"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	app := func(healthChanged string) map[string]any {
		return map[string]any{"status": map[string]any{
			"health": map[string]any{"status": "Healthy", "lastTransitionTime": healthChanged},
			"operationState": map[string]any{"phase": "Succeeded", "startedAt": "2026-11-26T10:00:00Z",
				"finishedAt": "2026-11-26T10:05:00Z", "syncResult": map[string]any{"revision": "abc"}},
		}}
	}
	for _, tt := range []struct {
		name, healthChanged string
		want                bool
	}{
		// Healthy within a minute before the sync finished: deployed.
		{"healthy as the sync finished", "2026-11-26T10:04:30Z", true},
		// Healthy long before the sync finished, and after it started:
		// the health is not the sync's.
		{"healthy before the sync finished", "2026-11-26T10:02:00Z", false},
		// Healthy before the sync started: the catalog fires.
		{"healthy before the sync started", "2026-11-26T09:00:00Z", true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			res := Evaluate(tr, NewEnv(app(tt.healthChanged), nil, nil, nil, time.Time{}))
			if len(res) != 1 || res[0].Err != nil || res[0].Triggered != tt.want {
				t.Fatalf("result %+v, want triggered=%v without error", res, tt.want)
			}
			if tt.want && res[0].OncePer != "abc" {
				t.Errorf("oncePer = %q, want abc", res[0].OncePer)
			}
		})
	}
}
