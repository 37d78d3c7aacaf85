package creds_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"

	"github.com/crowsnest-dev/crowsnest/internal/testwait"
	"github.com/crowsnest-dev/crowsnest/registry/creds"
)

// countingScript prints "user:pass-<n>" where n counts its runs, kept in a
// file next to it.
func countingScript(t *testing.T) (ref creds.Ref, runs func() int) {
	t.Helper()
	dir := t.TempDir()
	count := filepath.Join(dir, "count")
	path := writeScript(t, dir, "count.sh", `echo run >> "`+count+`"; echo "user:pass-$(wc -l < "`+count+`" | tr -d ' ')"`)
	return mustParse(t, "ext:"+path), func() int {
		data, err := os.ReadFile(count)
		if errors.Is(err, os.ErrNotExist) {
			return 0
		}
		if err != nil {
			t.Fatal(err)
		}
		return strings.Count(string(data), "\n")
	}
}

func password(t *testing.T, a authn.Authenticator) string {
	t.Helper()
	cfg, err := a.Authorization()
	if err != nil {
		t.Fatal(err)
	}
	return cfg.Password
}

type step struct {
	advance    time.Duration
	invalidate bool
	host       string
	wantPass   string
	wantRuns   int
}

func TestAuthenticatorCachesUntilExpiry(t *testing.T) {
	tests := []struct {
		name   string
		expire time.Duration
		steps  []step
	}{
		{name: "expiring", expire: time.Hour, steps: []step{
			{wantPass: "pass-1", wantRuns: 1},
			{advance: 59 * time.Minute, wantPass: "pass-1", wantRuns: 1},
			{advance: time.Minute, wantPass: "pass-2", wantRuns: 2},
			{advance: 30 * time.Minute, wantPass: "pass-2", wantRuns: 2},
			{invalidate: true, wantPass: "pass-3", wantRuns: 3},
			{host: "b.io", wantPass: "pass-4", wantRuns: 4},
			{host: "index.docker.io", wantPass: "pass-5", wantRuns: 5},
			{host: "docker.io", wantPass: "pass-5", wantRuns: 5},
		}},
		{name: "forever until invalidated", expire: 0, steps: []step{
			{wantPass: "pass-1", wantRuns: 1},
			{advance: 1000 * time.Hour, wantPass: "pass-1", wantRuns: 1},
			{invalidate: true, wantPass: "pass-2", wantRuns: 2},
			{advance: time.Hour, wantPass: "pass-2", wantRuns: 2},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ref, runs := countingScript(t)
			now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
			r := &creds.Resolver{Now: func() time.Time { return now }}
			var prev authn.Authenticator
			for i, s := range tt.steps {
				host := s.host
				if host == "" {
					host = "a.io"
				}
				now = now.Add(s.advance)
				if s.invalidate {
					r.Invalidate(ref, host)
				}
				a, err := r.Authenticator(t.Context(), ref, host, tt.expire)
				if err != nil {
					t.Fatalf("step %d: %v", i, err)
				}
				if got := password(t, a); got != s.wantPass {
					t.Errorf("step %d: password %q, want %q", i, got, s.wantPass)
				}
				if got := runs(); got != s.wantRuns {
					t.Errorf("step %d: script ran %d times, want %d", i, got, s.wantRuns)
				}
				if fresh := i == 0 || tt.steps[i-1].wantRuns != s.wantRuns; fresh == (a == prev) {
					t.Errorf("step %d: same value as before = %v, want %v (callers compare to spot new credentials)", i, a == prev, !fresh)
				}
				prev = a
			}
			r.Reset()
			if _, err := r.Authenticator(t.Context(), ref, "a.io", tt.expire); err != nil || runs() != tt.steps[len(tt.steps)-1].wantRuns+1 {
				t.Errorf("after Reset: err %v, runs %d; want one more run", err, runs())
			}
		})
	}
}

func TestAuthenticatorSharesOneRead(t *testing.T) {
	dir := t.TempDir()
	count := filepath.Join(dir, "count")
	gate := filepath.Join(dir, "gate")
	// The script waits for the gate file, so every caller arrives while
	// the first read is still running.
	script := writeScript(t, dir, "slow.sh", `echo run >> "`+count+`"; while [ ! -e "`+gate+`" ]; do sleep 0.01; done; echo user:pass`)
	ref := mustParse(t, "ext:"+script)
	r := &creds.Resolver{}
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 8 {
		wg.Go(func() {
			_, err := r.Authenticator(t.Context(), ref, "a.io", 0)
			errs <- err
		})
	}
	joined := func() string { return fmt.Sprintf("%d of 8 joined", r.Waiting()) }
	testwait.Wait{Detail: joined}.For(t, "every caller to join the read", func() bool { return r.Waiting() >= 8 })
	if err := os.WriteFile(gate, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	if data, _ := os.ReadFile(count); string(data) != "run\n" {
		t.Errorf("script ran %d times for 8 concurrent callers, want 1", strings.Count(string(data), "\n"))
	}
}

func TestExtTimeoutKillsTheScriptAndItsChildren(t *testing.T) {
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "child.pid")
	// The child sleeps holding stdout open; only a group kill ends it.
	script := writeScript(t, dir, "hang.sh", `sleep 30 & echo $! > "`+pidFile+`"; wait`)
	r := &creds.Resolver{ExtTimeout: 200 * time.Millisecond}
	start := time.Now()
	_, err := r.Authenticator(t.Context(), mustParse(t, "ext:"+script), "a.io", 0)
	if !errors.Is(err, creds.ErrExtTimeout) {
		t.Fatalf("error = %v, want ErrExtTimeout", err)
	}
	if elapsed := time.Since(start); elapsed > 10*time.Second {
		t.Errorf("took %s; the timeout did not stop the script", elapsed)
	}
	pid, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	// Well within the child's own 30s: a child that was not killed fails.
	testwait.Within(t, "the script's child "+strings.TrimSpace(string(pid))+" to end with the timeout", 5*time.Second, func() bool {
		return !processAlive(strings.TrimSpace(string(pid)))
	})
}

// processAlive reports whether pid runs and is not a zombie.
func processAlive(pid string) bool {
	data, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		return false
	}
	_, rest, _ := strings.Cut(string(data), ") ")
	return !strings.HasPrefix(rest, "Z")
}

func TestAuthenticatorHonoursCallerContext(t *testing.T) {
	dir := t.TempDir()
	script := writeScript(t, dir, "slow.sh", `sleep 2; echo user:pass`)
	r := &creds.Resolver{}
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	_, err := r.Authenticator(ctx, mustParse(t, "ext:"+script), "a.io", 0)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("error = %v, want the caller's deadline", err)
	}
	// The read went on for later callers and is cached once done.
	a, err := r.Authenticator(t.Context(), mustParse(t, "ext:"+script), "a.io", 0)
	if err != nil || password(t, a) != "pass" {
		t.Fatalf("second call = %v, %v", a, err)
	}
}
