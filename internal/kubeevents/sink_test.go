package kubeevents_test

import (
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/crowsnest-dev/crowsnest/internal/kubecore"
	"github.com/crowsnest-dev/crowsnest/internal/kubeevents"
	"github.com/crowsnest-dev/crowsnest/internal/testenv"
	"github.com/crowsnest-dev/crowsnest/internal/testwait"
)

// client is a clientset for the test control plane with the rate limit
// crowsnest's defaults give it (kube-api-qps, kube-api-burst), or qps.
func client(t *testing.T, qps float32, burst int) *kubecore.Clientset {
	t.Helper()
	cfg := rest.CopyConfig(env.Config)
	cfg.QPS, cfg.Burst = qps, burst
	cs, err := kubecore.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

func newSink(t *testing.T, cs kubecore.Interface) (*kubeevents.Sink, *prometheus.Registry, *testenv.LogBuffer) {
	t.Helper()
	reg := prometheus.NewRegistry()
	logs := &testenv.LogBuffer{}
	s := &kubeevents.Sink{
		Client:  cs,
		Source:  corev1.EventSource{Component: "crowsnest"},
		Metrics: kubeevents.NewMetrics(reg),
		Log:     slog.New(slog.NewTextHandler(logs, nil)),
	}
	return s, reg, logs
}

func outcomes(t *testing.T, reg *prometheus.Registry) map[string]int {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int{}
	for _, mf := range mfs {
		if mf.GetName() != "crowsnest_kube_events_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			got[m.GetLabel()[0].GetValue()] = int(m.GetCounter().GetValue())
		}
	}
	return got
}

func app(ns, name string) *corev1.ObjectReference {
	return &corev1.ObjectReference{APIVersion: "argoproj.io/v1alpha1", Kind: "Application", Namespace: ns, Name: name,
		UID: types.UID("uid-" + name), ResourceVersion: "7"}
}

// recorded lists the namespace's Events and sums their counts.
func recorded(t *testing.T, cs kubecore.Interface, ns string) ([]corev1.Event, int) {
	t.Helper()
	list, err := cs.Events(ns).List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	sum := 0
	for i := range list.Items {
		sum += int(list.Items[i].Count)
	}
	return list.Items, sum
}

// The broadcaster this replaces recorded ~1200 of 3000 Events of one pass:
// every one must reach the apiserver, as an Event of its own or in the
// count of one it repeats.
func TestEveryEventOfAPassIsRecorded(t *testing.T) {
	ns := env.CreateNamespace(t, "events")
	cs := client(t, 300, 1000)
	s, reg, logs := newSink(t, cs)
	s.Start()
	const apps, repeats = 3000, 5
	for i := range apps {
		s.Event(app(ns, fmt.Sprintf("app-%d", i)), corev1.EventTypeNormal, "ImagesUpdated", fmt.Sprintf("team/web:1.0.%d -> 1.1.0", i))
	}
	for range repeats { // a repeated Warning, as a failing registry gives
		s.Event(app(ns, "app-0"), corev1.EventTypeWarning, "UpdateFailed", "listing tags: 503")
	}
	s.Shutdown(2 * time.Minute)

	events, sum := recorded(t, cs, ns)
	if sum != apps+repeats {
		t.Fatalf("counts of %d Events sum to %d, want %d", len(events), sum, apps+repeats)
	}
	got := outcomes(t, reg)
	if got["written"]+got["aggregated"] != apps+repeats || got["refused"]+got["dropped"]+got["unflushed"] != 0 {
		t.Fatalf("outcomes %v, want %d written or aggregated and nothing else", got, apps+repeats)
	}
	if strings.Contains(logs.String(), "events shed") {
		t.Fatalf("shed log line with nothing shed:\n%s", logs)
	}
	warnings := 0
	for _, e := range events {
		if e.Reason == "UpdateFailed" {
			warnings++
			if e.Type != corev1.EventTypeWarning || e.Message != "listing tags: 503" {
				t.Fatalf("warning Event %+v", e)
			}
		}
		if e.Reason != "ImagesUpdated" {
			continue
		}
		want := *app(ns, e.InvolvedObject.Name)
		if e.InvolvedObject != want || e.Type != corev1.EventTypeNormal || e.Source.Component != "crowsnest" ||
			e.Count != 1 || e.FirstTimestamp.IsZero() || e.LastTimestamp.IsZero() || !strings.HasSuffix(e.Message, " -> 1.1.0") {
			t.Fatalf("Event %+v", e)
		}
	}
	if warnings == 0 || warnings > repeats {
		t.Fatalf("%d UpdateFailed Events for %d identical records", warnings, repeats)
	}
}

// A repeat of an Event already written raises its count, as Kubernetes'
// correlator does, instead of adding an Event.
func TestRepeatRaisesTheCount(t *testing.T) {
	ns := env.CreateNamespace(t, "events")
	cs := client(t, 300, 1000)
	s, reg, _ := newSink(t, cs)
	s.Start()
	defer s.Shutdown(time.Minute)
	s.Event(app(ns, "web"), corev1.EventTypeWarning, "UpdateFailed", "listing tags: 503")
	testwait.For(t, "the first Event written", func() bool { return outcomes(t, reg)["written"] == 1 })
	s.Event(app(ns, "web"), corev1.EventTypeWarning, "UpdateFailed", "listing tags: 503")
	testwait.For(t, "the repeated Event written", func() bool { return outcomes(t, reg)["written"] == 2 })
	events, sum := recorded(t, cs, ns)
	if len(events) != 1 || sum != 2 || events[0].LastTimestamp.Before(&events[0].FirstTimestamp) {
		t.Fatalf("%d Events (count sum %d), want one with count 2: %+v", len(events), sum, events)
	}
}

// Events the apiserver refuses (here: their namespace is being deleted)
// are counted and logged, not lost without a trace.
func TestRefusedEventsAreCountedAndLogged(t *testing.T) {
	ns := env.CreateNamespace(t, "events")
	cs := client(t, 300, 1000)
	// No namespace controller runs: the namespace stays Terminating, and
	// the apiserver refuses new objects in it.
	admin, err := kubernetes.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	if err := admin.CoreV1().Namespaces().Delete(t.Context(), ns, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	s, reg, logs := newSink(t, cs)
	s.Start()
	const n = 20
	for i := range n {
		s.Event(app(ns, fmt.Sprintf("app-%d", i)), corev1.EventTypeNormal, "ImagesUpdated", "a -> b")
	}
	s.Shutdown(time.Minute)
	if got := outcomes(t, reg); got["refused"] != n || got["written"] != 0 {
		t.Fatalf("outcomes %v, want %d refused", got, n)
	}
	if !strings.Contains(logs.String(), "msg=\"events shed\"") || !strings.Contains(logs.String(), "being terminated") {
		t.Fatalf("no log line for the refused Events:\n%s", logs)
	}
	if total := logged(logs, "refused"); total != n {
		t.Fatalf("log lines count %d refused, want %d:\n%s", total, n, logs)
	}
}

// Shutdown writes what is pending; when its time runs out first, it
// returns anyway and counts and logs what it did not write.
func TestShutdownFlushesWithinItsTime(t *testing.T) {
	ns := env.CreateNamespace(t, "events")
	cs := client(t, 300, 1000)
	s, _, _ := newSink(t, cs)
	s.Start()
	for i := range 200 {
		s.Event(app(ns, fmt.Sprintf("app-%d", i)), corev1.EventTypeNormal, "ImagesUpdated", "a -> b")
	}
	s.Shutdown(time.Minute)
	if _, sum := recorded(t, cs, ns); sum != 200 {
		t.Fatalf("%d Events recorded after Shutdown, want 200", sum)
	}

	slow := client(t, 2, 1) // two Events a second: 100 take 50 s
	s, reg, logs := newSink(t, slow)
	s.Start()
	for i := range 100 {
		s.Event(app(ns, fmt.Sprintf("slow-%d", i)), corev1.EventTypeNormal, "ImagesUpdated", "a -> b")
	}
	start := time.Now()
	s.Shutdown(time.Second)
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("Shutdown(1s) took %v", d)
	}
	got := outcomes(t, reg)
	if got["written"]+got["unflushed"] != 100 || got["unflushed"] == 0 {
		t.Fatalf("outcomes %v, want 100 written or unflushed", got)
	}
	if logged(logs, "unflushed") != got["unflushed"] {
		t.Fatalf("no log line for %d unflushed Events:\n%s", got["unflushed"], logs)
	}
	s.Event(app(ns, "late"), corev1.EventTypeNormal, "ImagesUpdated", "a -> b")
	if outcomes(t, reg)["unflushed"] != got["unflushed"]+1 {
		t.Fatal("an Event after Shutdown was not counted as unflushed")
	}
}

// With MaxPending Events waiting, a record joins a waiting Event of its
// object, type and reason (its count says how many); one with nothing to
// join is dropped. Both are counted and logged, and the counts of what
// was written add up to what the metric says.
func TestPressureAggregatesThenDrops(t *testing.T) {
	ns := env.CreateNamespace(t, "events")
	cs := client(t, 5, 1)
	s, reg, logs := newSink(t, cs)
	s.MaxPending, s.Workers = 4, 1
	s.Start()
	const objects, each = 8, 10
	for j := range each {
		for i := range objects {
			s.Event(app(ns, fmt.Sprintf("app-%d", i)), corev1.EventTypeWarning, "UpdateFailed", fmt.Sprintf("attempt %d", j))
		}
	}
	s.Shutdown(time.Minute)
	got := outcomes(t, reg)
	if sum := got["written"] + got["aggregated"] + got["dropped"] + got["refused"] + got["unflushed"]; sum != objects*each {
		t.Fatalf("outcomes %v sum to %d, want %d", got, sum, objects*each)
	}
	if got["aggregated"] == 0 || got["dropped"] == 0 {
		t.Fatalf("outcomes %v: want some aggregated and some dropped under pressure", got)
	}
	events, sum := recorded(t, cs, ns)
	if sum != got["written"]+got["aggregated"] || len(events) != got["written"] {
		t.Fatalf("%d Events with counts summing to %d; metric says %v", len(events), sum, got)
	}
	combined := false
	for _, e := range events {
		combined = combined || strings.HasPrefix(e.Message, "(combined from similar events): attempt ")
	}
	if !combined {
		t.Fatalf("no combined Event among %+v", events)
	}
	if !strings.Contains(logs.String(), "msg=\"events shed\"") {
		t.Fatalf("no log line for the shed Events:\n%s", logs)
	}
}

// logged sums key=N over the "events shed" log lines.
func logged(logs *testenv.LogBuffer, key string) int {
	total := 0
	for _, line := range strings.Split(logs.String(), "\n") {
		if !strings.Contains(line, `msg="events shed"`) {
			continue
		}
		var n int
		if i := strings.Index(line, " "+key+"="); i >= 0 {
			if _, err := fmt.Sscanf(line[i:], " "+key+"=%d", &n); err != nil {
				return -1
			}
		}
		total += n
	}
	return total
}
