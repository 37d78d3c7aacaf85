package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/crowsnest-dev/crowsnest/config"
	"github.com/crowsnest-dev/crowsnest/internal/setup"
	"github.com/crowsnest-dev/crowsnest/internal/testreg"
	"github.com/crowsnest-dev/crowsnest/registry"
)

// twoLimitsConf is a registries.conf with two prefixes on one host and
// different limits, which argocd-image-updater loads (one limiter per
// entry: registry-scanner/pkg/registry/endpoints.go).
func twoLimitsConf(host string, slow, fast int) string {
	return fmt.Sprintf(`registries:
- name: slow team
  prefix: %[1]s/slow
  api_url: http://%[1]s
  insecure: yes
  limit: %[2]d
- name: fast team
  prefix: %[1]s/fast
  api_url: http://%[1]s
  insecure: yes
  limit: %[3]d
`, host, slow, fast)
}

func writeTestFile(t *testing.T, path, content string) string {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// `run` and `config validate` take the same decision on every config:
// both accept two prefixes of one host with their own limits, both refuse
// what only reading registries.conf, CA files, webhook secrets or the
// Git writer's files reveal. Before they shared setup.CheckConfig, validate
// accepted each of the refused ones, which run refused.
func TestRunAndConfigValidateAgree(t *testing.T) {
	const header = "apiVersion: crowsnest.dev/v1alpha1\nkind: Config\n"
	tests := []struct {
		name    string
		conf    string // registries.conf beside the config, if any
		config  string
		wantErr string // "" when both must accept
	}{
		{name: "two prefixes of one host with their own limits", conf: twoLimitsConf("registry.local:5000", 1, 50),
			config: header + "registries:\n  confFile: registries.conf\n"},
		{name: "registries.conf with an unknown key", conf: "registries:\n- prefix: a.io\n  limt: 3\n",
			config: header + "registries:\n  confFile: registries.conf\n", wantErr: "registries[0].limt: unknown field"},
		{name: "registries.conf missing", config: header + "registries:\n  confFile: nope.conf\n", wantErr: "nope.conf"},
		{name: "two API URLs for one host",
			conf:   "registries:\n- {prefix: ghcr.io/a, api_url: 'https://x.io'}\n- {prefix: ghcr.io/b, api_url: 'https://y.io'}\n",
			config: header + "registries:\n  confFile: registries.conf\n", wantErr: "per registry host"},
		{name: "CA file that is not there", config: header + "registries:\n  list:\n    - {prefix: a.io, caFile: missing.pem}\n", wantErr: "reading caFile"},
		{name: "webhook secret not set", config: header + "registries:\n  webhook:\n    sources:\n      - {type: harbor, secretEnv: CROWSNEST_TEST_UNSET_SECRET}\n",
			wantErr: "CROWSNEST_TEST_UNSET_SECRET"},
		{name: "broken commit message template", config: header + "git:\n  commitMessage: '{{ .Nope '\n", wantErr: "git.commitMessage"},
		{name: "Git signing key that is not there", config: header + "git:\n  signingKey: file:/nonexistent/crowsnest-key.asc\n", wantErr: "git.signingKey"},
		{name: "Git CA file that is not there", config: header + "git:\n  tls:\n    git.example.com:\n      caFile: /nonexistent/ca.pem\n", wantErr: "git.tls"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			if tt.conf != "" {
				writeTestFile(t, filepath.Join(dir, "registries.conf"), tt.conf)
			}
			cfg := writeTestFile(t, filepath.Join(dir, "crowsnest.yaml"), tt.config)
			apps := t.TempDir()
			_, vErr, vRunErr := execute(t, "config", "validate", cfg)
			_, rErr, rRunErr := execute(t, "run", "--config", cfg, "--apps-dir", apps, "--once",
				"--git-cache-dir", filepath.Join(dir, "git"), "--metrics-bind-address", "0",
				"--health-probe-bind-address", "0", "--webhook-bind-address", "0")
			if tt.wantErr == "" {
				if vRunErr != nil || rRunErr != nil {
					t.Fatalf("want both to accept: validate: %v %s; run: %v %s", vRunErr, vErr, rRunErr, rErr)
				}
				return
			}
			if vRunErr == nil || rRunErr == nil {
				t.Fatalf("want both to refuse: validate: %v; run: %v", vRunErr, rRunErr)
			}
			if !strings.Contains(vErr, tt.wantErr) {
				t.Errorf("config validate does not say %q:\n%s", tt.wantErr, vErr)
			}
			if !strings.Contains(rRunErr.Error(), tt.wantErr) {
				t.Errorf("run does not say %q: %v", tt.wantErr, rRunErr)
			}
		})
	}
}

// Each registries.conf entry paces the images it serves at its own limit,
// as argocd-image-updater's limiter per endpoint does: while the slow
// prefix's requests queue at 1/s, the fast prefix of the same host lists
// 60 times at once. Counts at a real registry prove it: the slow prefix
// never got more than its burst plus 1/s of the time that passed (a
// bound a slow machine only makes easier), and the fast one, had it shared
// that limiter, would have needed about a minute for its 60 lists. An
// image naming its own pull secret is paced by the same limiter.
func TestEachRegistryEntryIsPacedAtItsOwnLimit(t *testing.T) {
	reg := testreg.StartOCI(t, testreg.OCIOptions{})
	reg.Push(t, "slow/app:1", testreg.Image(t, time.Now(), ""))
	reg.Push(t, "fast/app:1", testreg.Image(t, time.Now(), ""))
	dir := t.TempDir()
	writeTestFile(t, filepath.Join(dir, "registries.conf"), twoLimitsConf(reg.Host(), 1, 1000))
	cfgPath := writeTestFile(t, filepath.Join(dir, "crowsnest.yaml"),
		"apiVersion: crowsnest.dev/v1alpha1\nkind: Config\nregistries:\n  confFile: registries.conf\n")
	cfg, err := config.Load(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	if err := setup.CheckConfig(cfg, dir); err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.DiscardHandler)
	regs, err := setup.NewRegistries(cfg, dir, nil, registry.NewMetrics(prometheus.NewRegistry()), log)
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("CROWSNEST_TEST_PULL", "user:pass")
	tenant := regs.ForPullSecret("env:CROWSNEST_TEST_PULL")
	slow, err := registry.ParseRepo(reg.Host() + "/slow/app")
	if err != nil {
		t.Fatal(err)
	}
	fast, err := registry.ParseRepo(reg.Host() + "/fast/app")
	if err != nil {
		t.Fatal(err)
	}
	// Burst of the slow entry: five seconds of its rate.
	const slowBurst = 5
	start := time.Now()
	slowCtx, stopSlow := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	for i := range 30 {
		c := regs.Client
		if i%2 == 1 {
			c = tenant
		}
		wg.Go(func() { _, _ = c.ListTags(slowCtx, slow) })
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	for range 60 {
		if _, err := regs.Client.ListTags(ctx, fast); err != nil {
			t.Fatalf("listing the fast prefix while the slow one is paced: %v", err)
		}
	}
	slowSeen := reg.Count("list", "/slow/")
	elapsed := time.Since(start)
	stopSlow()
	wg.Wait()
	if got := reg.Count("list", "/fast/"); got != 60 {
		t.Errorf("fast prefix lists at the registry = %d, want 60", got)
	}
	if most := slowBurst + int(elapsed.Seconds()) + 1; slowSeen > most {
		t.Errorf("slow prefix (limit 1/s) lists at the registry = %d in %s, want at most %d", slowSeen, elapsed.Round(time.Millisecond), most)
	}
	if slowSeen == 0 {
		t.Error("slow prefix: no list reached the registry")
	}
}
