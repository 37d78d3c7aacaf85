package daemon

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/crowsnest-dev/crowsnest/config"
	"github.com/crowsnest-dev/crowsnest/controller"
	"github.com/crowsnest-dev/crowsnest/internal/testenv"
	"github.com/crowsnest-dev/crowsnest/internal/testreg"
)

// events is an Observer that keeps what it is told.
type events struct {
	mu  sync.Mutex
	got []Event
}

func (e *events) Observe(ev Event) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.got = append(e.got, ev)
}

// The library's whole contract in local mode, without the CLI: New builds
// from plain Options, Run with Once ends after one pass, the Observer is
// told of the update's Event, and the patched Application is readable
// afterwards.
func TestNewRunOnceInLocalMode(t *testing.T) {
	reg := testreg.StartOCI(t, testreg.OCIOptions{})
	t0 := time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)
	for i, tag := range []string{"1.0.0", "1.2.0"} {
		reg.Push(t, "team/api:"+tag, testreg.Image(t, t0.Add(time.Duration(i)*time.Hour), "linux/amd64"))
	}
	image := reg.Host() + "/team/api"
	apps := t.TempDir()
	app := fmt.Sprintf(`apiVersion: argoproj.io/v1alpha1
kind: Application
metadata:
  name: api
  namespace: ci
  annotations:
    argocd-image-updater.argoproj.io/image-list: api=%[1]s:^1
spec:
  project: default
  source: {repoURL: https://git.example.invalid/api.git, path: deploy}
  destination: {server: https://kubernetes.default.svc, namespace: api}
status:
  summary: {images: ["%[1]s:1.0.0"]}
`, image)
	if err := os.WriteFile(filepath.Join(apps, "apps.yaml"), []byte(app), 0o600); err != nil {
		t.Fatal(err)
	}
	var log testenv.LogBuffer
	obs := &events{}
	d, err := New(t.Context(), Options{AppsDir: apps, Once: true, GitCacheDir: filepath.Join(t.TempDir(), "git"),
		Stderr: &log, Observer: obs, Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Run(t.Context()); err != nil {
		t.Fatalf("Run: %v\n%s", err, log.String())
	}
	want := []Event{{App: "ci/api", Type: "Normal", Reason: controller.EventImagesUpdated,
		Message: image + ": 1.0.0 -> 1.2.0 (patched the Application)"}}
	if diff := cmp.Diff(want, obs.got); diff != "" {
		t.Errorf("observed Events (-want +got):\n%s", diff)
	}
	if _, ok := d.LocalApplication(t.Context(), "ci", "api"); !ok {
		t.Error("LocalApplication: the patched Application is not there")
	}
	if !strings.Contains(log.String(), "crowsnest: one pass: 1 applications, 1 managed: 1 updated, 0 up to date, 0 held, 0 failed\n") {
		t.Errorf("no summary line:\n%s", log.String())
	}
	if err := d.Run(t.Context()); err == nil {
		t.Error("a second Run did not fail")
	}
}

func TestNewRefusesOptionsThatCannotRun(t *testing.T) {
	tests := []struct {
		name string
		o    Options
		want string
	}{
		{name: "once without a folder or a dry run", o: Options{Once: true}, want: "--once needs --apps-dir"},
		{name: "unknown ImageUpdater mode", o: Options{ImageUpdaters: "sometimes"}, want: `--imageupdater-resources: "sometimes"`},
		{name: "negative pull request interval", o: Options{PullRequestInterval: -time.Second}, want: "--pull-request-interval: must not be negative"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := New(t.Context(), tt.o)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("New: %v, want an error with %q", err, tt.want)
			}
		})
	}
}

// Overrides set only what they hold, over the file's values.
func TestOverridesApply(t *testing.T) {
	var (
		none     []string
		selector = "team=a"
		workers  = 3
		interval = 5 * time.Minute
	)
	c := config.Default()
	c.Watch.Namespaces = []string{"argocd"}
	c.Log.Level = "warn"
	want := *c
	want.Watch.Namespaces = nil
	want.Watch.Selector = selector
	want.Controller.Workers = workers
	want.Registries.PollInterval = config.Duration{Duration: interval}
	(&Overrides{Namespaces: &none, Selector: &selector, Workers: &workers, PollInterval: &interval}).apply(c)
	if diff := cmp.Diff(&want, c); diff != "" {
		t.Errorf("config after the overrides (-want +got):\n%s", diff)
	}
}
