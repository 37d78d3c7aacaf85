// Package examples_test checks that every example in this folder is valid:
// configs pass `crowsnest config validate` rules and Application files are
// read by the file source without errors.
package examples_test

import (
	"context"
	"path/filepath"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/crowsnest-dev/crowsnest/config"
	"github.com/crowsnest-dev/crowsnest/watcher"
)

func TestConfigExamplesAreValid(t *testing.T) {
	files, err := filepath.Glob("config/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no config examples found (%v)", err)
	}
	for _, f := range files {
		if _, err := config.Load(f); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
}

type collect struct {
	mu   sync.Mutex
	keys []string
}

func (c *collect) OnAppEvent(ev watcher.AppEvent) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.keys = append(c.keys, "Application "+ev.Key())
}

func (c *collect) OnProjectEvent(ev watcher.ProjectEvent) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.keys = append(c.keys, "AppProject "+ev.New.Key())
}

func TestAppExamplesAreReadable(t *testing.T) {
	reg := prometheus.NewRegistry()
	src := &watcher.FileSource{Dir: "apps", Metrics: watcher.NewMetrics(reg)}
	c := &collect{}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- src.Start(ctx, c) }()
	deadline := time.Now().Add(30 * time.Second)
	for !src.Synced() && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	c.mu.Lock()
	got := append([]string(nil), c.keys...)
	c.mu.Unlock()
	sort.Strings(got)
	want := []string{"AppProject argocd/payments", "Application argocd/guestbook", "Application argocd/shop"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("objects read from examples/apps (-want +got):\n%s", diff)
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == "crowsnest_watch_objects_invalid_total" {
			t.Errorf("an example was unreadable: %v", mf)
		}
	}
}
