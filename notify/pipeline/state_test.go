package pipeline_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/crowsnest-dev/crowsnest/internal/kubecore"
	"github.com/crowsnest-dev/crowsnest/notify/pipeline"
	"github.com/crowsnest-dev/crowsnest/triggers"
)

// ConfigMapState keeps each Application's state across instances (a
// restart reads what the previous process saved), and a zero state
// deletes the entry.
func TestConfigMapStateRoundTrip(t *testing.T) {
	cs, err := kubecore.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	ns := env.CreateNamespace(t, "notify-state")
	web := pipeline.State{State: triggers.State{Seen: true, Fired: []string{"on-deployed:r1"}}, Seq: 7}
	api := pipeline.State{State: triggers.State{Seen: true}}
	first := &pipeline.ConfigMapState{Client: cs, Namespace: ns, Shards: 2}
	for id, st := range map[string]pipeline.State{"u-web": web, "u-api": api} {
		if err := first.Save(t.Context(), id, st); err != nil {
			t.Fatalf("saving %s: %v", id, err)
		}
	}
	if err := first.Save(t.Context(), "u-api", pipeline.State{}); err != nil {
		t.Fatal(err)
	}
	got, err := (&pipeline.ConfigMapState{Client: cs, Namespace: ns, Shards: 2}).LoadAll(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]pipeline.State{"u-web": web}, got); diff != "" {
		t.Errorf("states loaded by a new instance (-want +got):\n%s", diff)
	}
}
