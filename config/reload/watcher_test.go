package reload

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/goleak"

	"github.com/crowsnest-dev/crowsnest/config"
	"github.com/crowsnest-dev/crowsnest/internal/testwait"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const header = "apiVersion: crowsnest.dev/v1alpha1\nkind: Config\n"

// waitTimeout bounds each wait for a reload. It is no longer than the
// watcher's recheckInterval, so that a change the watcher missed and only
// its periodic re-read found does not pass for one it noticed.
const waitTimeout = recheckInterval

// changeCounter is an Applier that accepts every version and counts the
// Apply calls.
type changeCounter struct {
	t       *testing.T
	mu      sync.Mutex
	changes int
}

func (*changeCounter) Accept(*config.Config) error { return nil }

func (c *changeCounter) Apply(old, cur *config.Config) {
	if old == nil || cur == nil || old == cur {
		c.t.Errorf("Apply(%p, %p): want two different configs", old, cur)
	}
	c.mu.Lock()
	c.changes++
	c.mu.Unlock()
}

func (c *changeCounter) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.changes
}

// watchFile starts a Watcher on path until the test ends and counts
// Apply calls.
func watchFile(t *testing.T, path string) (*Watcher, *prometheus.Registry, func() int) {
	t.Helper()
	reg := prometheus.NewRegistry()
	counter := &changeCounter{t: t}
	w := &Watcher{Path: path, Metrics: NewMetrics(reg), Applier: counter}
	if _, err := w.Load(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- w.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Start() = %v", err)
		}
	})
	return w, reg, counter.count
}

func counterValue(t *testing.T, reg *prometheus.Registry, result string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "crowsnest_config_reloads_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			if m.GetLabel()[0].GetValue() == result {
				return m.GetCounter().GetValue()
			}
		}
	}
	t.Fatalf("no reload counter for %q", result)
	return 0
}

func writeAtomically(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path+".tmp", []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(path+".tmp", path); err != nil {
		t.Fatal(err)
	}
}

func TestWatcherReloadsRejectsAndRecovers(t *testing.T) {
	path := filepath.Join(t.TempDir(), "crowsnest.yaml")
	writeAtomically(t, path, header+"log: {level: info}\n")
	w, reg, changes := watchFile(t, path)

	// In-place write (not a rename): picked up.
	if err := os.WriteFile(path, []byte(header+"log: {level: debug}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	testwait.Within(t, "the debug level", waitTimeout, func() bool { return w.Current().Log.Level == "debug" })

	// A broken version is rejected and the old one stays.
	writeAtomically(t, path, header+"log: {level: debug}\ncontroller: {workers: many}\n")
	testwait.Within(t, "the rejection to be counted", waitTimeout, func() bool { return counterValue(t, reg, "error") == 1 })
	if got := w.Current().Log.Level; got != "debug" {
		t.Errorf("after a rejected reload level = %q, want the old debug", got)
	}

	// The same content again (touch) is not a change.
	writeAtomically(t, path, header+"log: {level: debug}\ncontroller: {workers: many}\n")
	// A fixed version is accepted.
	writeAtomically(t, path, header+"log: {level: warn}\n")
	testwait.Within(t, "the warn level", waitTimeout, func() bool { return w.Current().Log.Level == "warn" })
	writeAtomically(t, path, header+"log: {level: warn}\n")
	// One more distinct change proves the identical write above was handled.
	writeAtomically(t, path, header+"log: {level: error}\n")
	testwait.Within(t, "the error level", waitTimeout, func() bool { return w.Current().Log.Level == "error" })

	if got := changes(); got != 3 {
		t.Errorf("Apply called %d times, want 3 (debug, warn, error)", got)
	}
	if got := counterValue(t, reg, "error"); got != 1 {
		t.Errorf("rejected reloads = %v, want 1 (the same bad bytes are not re-counted)", got)
	}
	if got := counterValue(t, reg, "success"); got != 3 {
		t.Errorf("successful reloads = %v, want 3", got)
	}
}

// TestWatcherFollowsConfigMapSymlinkSwap builds the layout kubelet gives a
// mounted ConfigMap and updates it the way kubelet does.
func TestWatcherFollowsConfigMapSymlinkSwap(t *testing.T) {
	dir := t.TempDir()
	version := func(name, content string) {
		t.Helper()
		if err := os.Mkdir(filepath.Join(dir, name), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name, "crowsnest.yaml"), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		tmp := filepath.Join(dir, "..data_tmp")
		if err := os.Symlink(name, tmp); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, filepath.Join(dir, "..data")); err != nil {
			t.Fatal(err)
		}
	}
	version("..2026_11_22_10_00_00.1", header+"log: {level: info}\n")
	if err := os.Symlink(filepath.Join("..data", "crowsnest.yaml"), filepath.Join(dir, "crowsnest.yaml")); err != nil {
		t.Fatal(err)
	}
	w, _, changes := watchFile(t, filepath.Join(dir, "crowsnest.yaml"))

	version("..2026_11_22_10_05_00.2", header+"log: {level: debug}\n")
	if err := os.RemoveAll(filepath.Join(dir, "..2026_11_22_10_00_00.1")); err != nil {
		t.Fatal(err)
	}
	testwait.Within(t, "the swapped-in version", waitTimeout, func() bool { return w.Current().Log.Level == "debug" })
	if got := changes(); got != 1 {
		t.Errorf("Apply called %d times, want 1", got)
	}
}

func TestWatcherStartNeedsLoad(t *testing.T) {
	if err := (&Watcher{Path: "x"}).Start(t.Context()); err == nil {
		t.Error("Start without Load succeeded")
	}
	if _, err := (&Watcher{Path: filepath.Join(t.TempDir(), "missing.yaml")}).Load(); err == nil {
		t.Error("Load of a missing file succeeded")
	}
}

// A version that parses but that the Applier refuses (in the daemon: a trigger
// expression or image policy that does not compile) is rejected, counted
// as an error, and the old one stays.
func TestWatcherAcceptRejects(t *testing.T) {
	path := filepath.Join(t.TempDir(), "crowsnest.yaml")
	writeAtomically(t, path, header+"log: {level: info}\n")
	reg := prometheus.NewRegistry()
	w := &Watcher{Path: path, Metrics: NewMetrics(reg), Applier: refuseLevel("warn")}
	if _, err := w.Load(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- w.Start(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Start() = %v", err)
		}
	}()
	writeAtomically(t, path, header+"log: {level: warn}\n")
	testwait.Within(t, "the rejection to be counted", waitTimeout, func() bool { return counterValue(t, reg, "error") == 1 })
	if got := w.Current().Log.Level; got != "info" {
		t.Errorf("after a refused reload level = %q, want the old info", got)
	}
	writeAtomically(t, path, header+"log: {level: debug}\n")
	testwait.Within(t, "the debug level", waitTimeout, func() bool { return w.Current().Log.Level == "debug" })
	if got := counterValue(t, reg, "success"); got != 1 {
		t.Errorf("successful reloads = %v, want 1", got)
	}
}

// refuseLevel is an Applier that refuses versions of that log level.
type refuseLevel string

func (l refuseLevel) Accept(c *config.Config) error {
	if c.Log.Level == string(l) {
		return errors.New(string(l) + " is refused here")
	}
	return nil
}

func (refuseLevel) Apply(_, _ *config.Config) {}
