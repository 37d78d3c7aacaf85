package conformance

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/argoproj/argo-cd/v3/util/notification/expression"
	"github.com/argoproj/notifications-engine/pkg/api"
	"github.com/argoproj/notifications-engine/pkg/controller"
	"github.com/argoproj/notifications-engine/pkg/services"
	netriggers "github.com/argoproj/notifications-engine/pkg/triggers"
	"github.com/sirupsen/logrus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/crowsnest-dev/crowsnest/config"
	cntriggers "github.com/crowsnest-dev/crowsnest/triggers"
)

// notifications-engine logs each condition that fails to evaluate (a
// missing field, as half the generated Applications have) at error level;
// the tests compare results, so its log would only bury theirs.
func init() { logrus.SetLevel(logrus.PanicLevel) }

// argoCDCatalog reads Argo CD's notifications catalog
// (notifications_catalog/install.yaml, the argocd-notifications-cm it
// installs) unchanged from the module cache.
func argoCDCatalog(t *testing.T) map[string]string {
	t.Helper()
	catalogOnce.Do(func() { catalogData, catalogErr = readArgoCDCatalog() })
	if catalogErr != nil {
		t.Fatal(catalogErr)
	}
	return maps.Clone(catalogData)
}

var (
	catalogOnce sync.Once
	catalogData map[string]string
	catalogErr  error
)

func readArgoCDCatalog() (map[string]string, error) {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/argoproj/argo-cd/v3").Output()
	if err != nil {
		return nil, fmt.Errorf("locating the argo-cd module: %w", err)
	}
	b, err := os.ReadFile(filepath.Join(strings.TrimSpace(string(out)), "notifications_catalog", "install.yaml"))
	if err != nil {
		return nil, err
	}
	var cm corev1.ConfigMap
	if err := yaml.Unmarshal(b, &cm); err != nil {
		return nil, fmt.Errorf("install.yaml: %w", err)
	}
	if len(cm.Data) == 0 {
		return nil, errors.New("install.yaml: no data")
	}
	return cm.Data, nil
}

// catalogSides loads the catalog into crowsnest (argocd-notifications-cm
// reader, triggers.Compile) and notifications-engine (api.ParseConfig).
func catalogSides(t *testing.T, extra map[string]string) (*cntriggers.Set, *api.Config, map[string]string) {
	t.Helper()
	data := argoCDCatalog(t)
	for k, v := range extra {
		data[k] = v
	}
	n, err := config.ParseArgoCDConfigMap(data, nil)
	if err != nil {
		t.Fatalf("crowsnest: %v", err)
	}
	set, err := cntriggers.Compile(n)
	if err != nil {
		t.Fatalf("crowsnest: %v", err)
	}
	cfg, err := api.ParseConfig(&corev1.ConfigMap{Data: data}, &corev1.Secret{})
	if err != nil {
		t.Fatalf("notifications-engine: %v", err)
	}
	return set, cfg, data
}

// propertySeed is CONFORMANCE_SEED when set, else the clock; the test
// prints it on failure.
func propertySeed(t *testing.T) uint64 {
	t.Helper()
	if s := os.Getenv("CONFORMANCE_SEED"); s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("CONFORMANCE_SEED: %v", err)
		}
		return v
	}
	return uint64(time.Now().UnixNano())
}

func reportSeed(t *testing.T, seed uint64) {
	t.Helper()
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("seed %d (rerun with CONFORMANCE_SEED=%d)", seed, seed)
		}
	})
}

func pick[T any](r *rand.Rand, xs ...T) T { return xs[r.IntN(len(xs))] }

// genNotifyApp builds an Application (unstructured) with the fields the
// catalog reads, each sometimes missing.
func genNotifyApp(r *rand.Rand, base time.Time) map[string]any {
	ts := func() any {
		switch r.IntN(10) {
		case 0:
			return nil
		case 1:
			return "not-a-time"
		}
		return base.Add(time.Duration(r.IntN(600)-300) * time.Second).Format(time.RFC3339)
	}
	put := func(m map[string]any, k string, v any) {
		if v != nil {
			m[k] = v
		}
	}
	rev := func() any { return pick[any](r, nil, "", "aaaa111", "bbbb222", "cccc333") }
	meta := map[string]any{"name": pick(r, "guestbook", "api", "web"), "namespace": "argocd"}
	if r.IntN(8) == 0 {
		meta["deletionTimestamp"] = base.Format(time.RFC3339)
	}
	spec := map[string]any{"project": "default"}
	src := func(u string) map[string]any {
		return map[string]any{"repoURL": u, "path": "app", "targetRevision": "HEAD"}
	}
	multi := r.IntN(3) == 0
	if multi {
		spec["sources"] = []any{src("https://github.com/org/a.git"), src("git@github.com:org/b.git")}
	} else if r.IntN(10) > 0 {
		spec["source"] = src(pick(r, "https://github.com/org/a.git", "git@github.com:org/b.git"))
	}
	status := map[string]any{}
	if r.IntN(8) > 0 {
		h := map[string]any{}
		put(h, "status", pick[any](r, nil, "Healthy", "Degraded", "Progressing", "Missing", "Unknown", "Suspended"))
		put(h, "lastTransitionTime", ts())
		status["health"] = h
	}
	if r.IntN(8) > 0 {
		s := map[string]any{}
		put(s, "status", pick[any](r, nil, "Synced", "OutOfSync", "Unknown"))
		if multi {
			s["revisions"] = []any{"aaaa111", "bbbb222"}
		} else {
			put(s, "revision", rev())
		}
		status["sync"] = s
	}
	if r.IntN(4) > 0 {
		op := map[string]any{}
		put(op, "phase", pick[any](r, nil, "Running", "Succeeded", "Failed", "Error", "Terminating"))
		put(op, "startedAt", ts())
		put(op, "finishedAt", ts())
		put(op, "message", pick[any](r, nil, "successfully synced", `quote " and \ backslash`))
		switch r.IntN(4) {
		case 0:
		case 1:
			op["syncResult"] = map[string]any{"revisions": []any{"aaaa111", "bbbb222"}}
		default:
			sr := map[string]any{}
			put(sr, "revision", rev())
			op["syncResult"] = sr
		}
		status["operationState"] = op
	}
	if r.IntN(3) == 0 {
		status["conditions"] = []any{map[string]any{"type": "SyncError", "message": "boom"}}
	}
	return map[string]any{"apiVersion": "argoproj.io/v1alpha1", "kind": "Application",
		"metadata": meta, "spec": spec, "status": status}
}

// engineVars are the variables Argo CD hands notifications-engine
// (util/notification/settings): app, context, and the helpers of
// expression.Spawn. The repo helpers are given no Argo CD service: the
// catalog's triggers and templates do not call GetCommitMetadata or
// GetAppDetails.
func engineVars(app map[string]any, ctx map[string]string) map[string]any {
	c := map[string]string{}
	for k, v := range ctx {
		c[k] = v
	}
	return expression.Spawn(&unstructured.Unstructured{Object: app}, nil, map[string]any{"app": app, "context": c})
}

// TestCatalogTriggersMatchNotificationsEngine evaluates each of the
// catalog's triggers, unchanged, on generated sequences of Applications
// with crowsnest and with notifications-engine and Argo CD's expression
// environment: condition results, oncePer values and the send decision
// (notifications-engine's NotificationsState against triggers.Step, no
// baseline, one destination) agree.
func TestCatalogTriggersMatchNotificationsEngine(t *testing.T) {
	seed := propertySeed(t)
	reportSeed(t, seed)
	r := rand.New(rand.NewPCG(seed, 0x5eed))
	set, cfg, _ := catalogSides(t, nil)
	engine, err := netriggers.NewService(cfg.Triggers)
	if err != nil {
		t.Fatal(err)
	}
	names := make([]string, 0, len(cfg.Triggers))
	for name := range cfg.Triggers {
		names = append(names, name)
	}
	slices.Sort(names)
	if len(names) != 8 {
		t.Fatalf("catalog has %d triggers, want Argo CD's eight: %v", len(names), names)
	}
	dest := services.Destination{Service: "slack", Recipient: "deploys"}
	const sequences, steps = 2500, 5
	cases, sends, skipped := 0, 0, 0
	base := time.Date(2026, 11, 26, 10, 0, 0, 0, time.UTC)
	for seq := 0; seq < sequences; seq++ {
		var cnState cntriggers.State
		neState := controller.NotificationsState{}
		var prev map[string]any
		for step := 0; step < steps; step++ {
			app := genNotifyApp(r, base)
			env := cntriggers.NewEnv(app, prev, nil, nil, base)
			vars := engineVars(app, nil)
			var all []cntriggers.Result
			for _, name := range names {
				cases++
				got := cntriggers.Evaluate(set.Triggers[name], env)
				want, err := engine.Run(name, vars)
				if err != nil {
					t.Fatalf("%s: notifications-engine: %v", name, err)
				}
				if len(got) != len(want) {
					t.Fatalf("%s: %d conditions, notifications-engine %d", name, len(got), len(want))
				}
				for i := range want {
					if got[i].Triggered != want[i].Triggered || got[i].OncePer != want[i].OncePer {
						if id := notificationDifference(name, app, got[i], want[i]); id != "" {
							skipped++
							continue
						}
						appJSON, _ := json.Marshal(app)
						t.Fatalf("sequence %d step %d, %s[%d]: crowsnest triggered=%v oncePer=%q err=%v; notifications-engine triggered=%v oncePer=%q\napp: %s",
							seq, step, name, i, got[i].Triggered, got[i].OncePer, got[i].Err, want[i].Triggered, want[i].OncePer, appJSON)
					}
				}
				// notifications-engine's send decision (controller.go).
				for _, cr := range want {
					if !cr.Triggered {
						neState.SetAlreadyNotified(false, "", name, cr, dest, false)
						continue
					}
					if neState.SetAlreadyNotified(false, "", name, cr, dest, true) {
						sends++
						all = append(all, cntriggers.Result{Trigger: name, Triggered: true, OncePer: cr.OncePer})
					}
				}
				all = append(all, got...)
			}
			// crowsnest's send decision over the same results.
			var cnSends []cntriggers.Send
			cnState, cnSends = cntriggers.Step(cnState, filterEval(all), cntriggers.StepOptions{App: "uid", MaxKeys: 1 << 20})
			wantSends := engineSends(all)
			gotSends := make([]string, 0, len(cnSends))
			for _, s := range cnSends {
				gotSends = append(gotSends, s.Trigger+"/"+s.OncePer)
			}
			if !slices.Equal(gotSends, wantSends) {
				appJSON, _ := json.Marshal(app)
				t.Fatalf("sequence %d step %d: crowsnest sends %q, notifications-engine %q\napp: %s", seq, step, gotSends, wantSends, appJSON)
			}
			prev = app
		}
	}
	t.Logf("seed %d: %d trigger evaluations (%d Applications, %d sequences), %d sends, %d allow-listed", seed, cases, sequences*steps, sequences, sends, skipped)
	if cases < 10000 {
		t.Fatalf("only %d cases", cases)
	}
}

// filterEval keeps crowsnest's own results (the markers engineSends reads
// carry no ConditionID).
func filterEval(all []cntriggers.Result) []cntriggers.Result {
	var out []cntriggers.Result
	for _, r := range all {
		if r.ConditionID != "" {
			out = append(out, r)
		}
	}
	return out
}

func engineSends(all []cntriggers.Result) []string {
	out := []string{}
	for _, r := range all {
		if r.ConditionID == "" {
			out = append(out, r.Trigger+"/"+r.OncePer)
		}
	}
	return out
}

// notificationDifference names the allow-listed difference that explains
// a disagreement, "" when none does.
func notificationDifference(trigger string, app map[string]any, got cntriggers.Result, want netriggers.ConditionResult) string {
	_ = trigger
	_ = app
	_ = got
	_ = want
	return ""
}
