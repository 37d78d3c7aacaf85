package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/crowsnest-dev/crowsnest/internal/testenv"
)

// The harness itself, end to end on S1's first two rounds, so `make test`
// keeps it working: it builds crowsnest, starts the real parts, measures
// and writes its report. Only what the harness counts is asserted, never
// how fast: the machine running the tests is shared.
func TestSmokeS1ColdStartAndSteadyState(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a control plane and runs crowsnest; skipped with -short")
	}
	// The harness builds crowsnest, out of the test cache's sight.
	if err := testenv.TrackSources(); err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	o, err := parseFlags([]string{"-scenarios", "S1", "-rounds", "1,2", "-out", out})
	if err != nil {
		t.Fatal(err)
	}
	o.log = testLog{t}
	rep, err := run(t.Context(), o)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Results) != 2 {
		t.Fatalf("%d results, want rounds 1 and 2: %+v", len(rep.Results), rep.Results)
	}
	s, _ := findScenario("S1")
	cold, steady := rep.Results[0], rep.Results[1]

	if cold.Done != s.N || cold.Kube["patch applications"] != s.N {
		t.Errorf("round 1: %d Applications updated with %d patches, want %d and %d", cold.Done, cold.Kube["patch applications"], s.N, s.N)
	}
	if cold.Registry[kindPing] != 1 {
		t.Errorf("round 1: %d registry pings, want 1", cold.Registry[kindPing])
	}
	if cold.WallSeconds < s.PollInterval.Seconds() && (cold.Registry[kindList] != s.K || cold.MaxListsPerRepo != 1) {
		t.Errorf("round 1: %d tag lists, at most %d per repository; want one per repository (%d)", cold.Registry[kindList], cold.MaxListsPerRepo, s.K)
	}
	if cold.CPUSeconds <= 0 || cold.PeakRSSMB <= 0 {
		t.Errorf("round 1: CPU %.2f s, peak RSS %.1f MB; the process was not measured", cold.CPUSeconds, cold.PeakRSSMB)
	}
	if steady.Done != s.K || steady.MaxListsPerRepo != 1 {
		t.Errorf("round 2: %d repositories polled again, at most %d lists each; want all %d once", steady.Done, steady.MaxListsPerRepo, s.K)
	}
	metadata := steady.Registry[kindHead] + steady.Registry[kindManifest] + steady.Registry[kindBlob]
	writes := steady.Kube["get applications"] + steady.Kube["patch applications"]
	if metadata != 0 || writes != 0 {
		t.Errorf("round 2: %d manifest/blob requests and %d Application gets/patches, want none", metadata, writes)
	}

	var fromFile report
	data, err := os.ReadFile(filepath.Join(out, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &fromFile); err != nil || len(fromFile.Results) != 2 {
		t.Errorf("results.json: %v, %d results", err, len(fromFile.Results))
	}
	md, err := os.ReadFile(filepath.Join(out, "results.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(md), "| S1 (N=100 K=10 T=50) | 1 cold start | 100/100 |") {
		t.Errorf("results.md lacks round 1's row:\n%s", md)
	}
}

// testLog sends the harness's progress to the test log.
type testLog struct{ t *testing.T }

func (l testLog) Write(p []byte) (int, error) {
	l.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}
