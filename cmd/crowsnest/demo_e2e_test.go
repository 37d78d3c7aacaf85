package main

import (
	"encoding/json"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/crowsnest-dev/crowsnest/internal/demo"
)

// `crowsnest demo` as a user runs it: a subprocess, no cluster. Its report
// must show the whole job: an update committed to Git (twice for web: the
// first pass, then the tag pushed mid-run), one patched in Kubernetes mode,
// one held by the deny window, and the notifications as the webhook got
// them. The demo gives up after its own --timeout (50 s by default), so a
// pass here also means it finished within that.
func TestE2EDemo(t *testing.T) {
	cmd := exec.CommandContext(t.Context(), binary, "demo", "-o", "json")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("crowsnest demo: %v\n%s", err, stderr.String())
	}
	var rep demo.Report
	if err := json.Unmarshal(out, &rep); err != nil {
		t.Fatalf("report is not JSON: %v\n%s", err, out)
	}
	t.Logf("demo took %.1fs", rep.Seconds)

	if len(rep.Warnings) > 0 {
		t.Errorf("warnings: %+v", rep.Warnings)
	}
	// Committed: 1.0.0 -> 1.1.0, then 1.1.0 -> 1.2.0, each exactly the tag line.
	if len(rep.Commits) != 2 {
		t.Fatalf("%d commits, want 2: %+v", len(rep.Commits), rep.Commits)
	}
	for i, want := range [][2]string{{"1.0.0", "1.1.0"}, {"1.1.0", "1.2.0"}} {
		d := rep.Commits[i].Diff
		if !strings.Contains(d, "-  newTag: "+want[0]+" # crowsnest keeps this up to date") ||
			!strings.Contains(d, "+  newTag: "+want[1]+" # crowsnest keeps this up to date") ||
			strings.Count(d, "\n-") != 2 || strings.Count(d, "\n+") != 2 { // the --- and +++ headers plus one line each
			t.Errorf("commit %d diff is not exactly newTag %s -> %s:\n%s", i, want[0], want[1], d)
		}
	}
	// Patched: api's Helm tag parameter, its other parameter kept.
	if len(rep.Patched) != 1 || rep.Patched[0].App != "demo/api" ||
		!strings.Contains(rep.Patched[0].Source, "value: 2.1.0") || !strings.Contains(rep.Patched[0].Source, "name: replicaCount") {
		t.Errorf("patched: %+v", rep.Patched)
	}
	// Held: worker, naming the AppProject's window.
	if len(rep.Held) != 1 || rep.Held[0].App != "demo/worker" || !strings.Contains(rep.Held[0].Message, "AppProject demo/frozen spec.syncWindows[0]") {
		t.Errorf("held: %+v", rep.Held)
	}
	// Notifications: one per event, as rendered by the catalog's webhook template.
	var events []string
	for _, n := range rep.Notifications {
		var body struct{ Event, App, From, To string }
		if err := json.Unmarshal([]byte(n.Body), &body); err != nil {
			t.Errorf("notification body is not JSON: %v: %s", err, n.Body)
			continue
		}
		events = append(events, body.Event+" "+body.App+" "+body.From+"->"+body.To)
	}
	slices.Sort(events)
	want := []string{
		"image-update-held worker ->3.1.0",
		"image-updated api 2.0.0->2.1.0",
		"image-updated web 1.0.0->1.1.0",
		"image-updated web 1.1.0->1.2.0",
	}
	if !slices.Equal(events, want) {
		t.Errorf("notifications:\n%s\nwant:\n%s", strings.Join(events, "\n"), strings.Join(want, "\n"))
	}
	// Progress went to stderr while it ran.
	for _, s := range []string{"crowsnest first pass", "pushed", "event", "webhook"} {
		if !strings.Contains(stderr.String(), s) {
			t.Errorf("progress lacks %q:\n%s", s, stderr.String())
		}
	}
}
