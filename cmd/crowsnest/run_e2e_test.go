package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/crowsnest-dev/crowsnest/internal/testenv"
	"github.com/crowsnest-dev/crowsnest/internal/testwait"
	"github.com/crowsnest-dev/crowsnest/watcher"
)

const waitTimeout = 60 * time.Second

// daemon is a `crowsnest run` process whose log lines the test can wait for.
type daemon struct {
	cmd  *exec.Cmd
	mu   sync.Mutex
	logs []string
	done chan error
}

func startDaemon(t *testing.T, args ...string) *daemon {
	t.Helper()
	d := &daemon{done: make(chan error, 1)}
	d.cmd = exec.Command(binary, append([]string{"run"}, withArgoNamespace(args)...)...)
	stderr, err := d.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	d.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := d.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var reading sync.WaitGroup
	reading.Go(func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			d.mu.Lock()
			d.logs = append(d.logs, sc.Text())
			d.mu.Unlock()
		}
		_, _ = io.Copy(io.Discard, stderr)
	})
	go func() {
		reading.Wait()
		d.done <- d.cmd.Wait()
	}()
	t.Cleanup(func() {
		_ = d.cmd.Process.Kill()
		exit := <-d.done
		if t.Failed() {
			t.Logf("crowsnest exit: %v", exit)
			t.Logf("crowsnest log:\n%s", strings.Join(d.lines(), "\n"))
		}
	})
	return d
}

func (d *daemon) lines() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]string(nil), d.logs...)
}

// waitLog waits for a log line containing every one of parts.
func (d *daemon) waitLog(t *testing.T, parts ...string) {
	t.Helper()
	waitFor(t, fmt.Sprintf("a log line with %q", parts), func() bool {
		for _, l := range d.lines() {
			all := true
			for _, p := range parts {
				all = all && strings.Contains(l, p)
			}
			if all {
				return true
			}
		}
		return false
	})
}

// waitFor is testwait.Within at waitTimeout, kept by this name so that
// the package's many callers need not change while its files move.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	testwait.Within(t, what, waitTimeout, cond)
}

func freeAddr(t *testing.T) string {
	t.Helper()
	addr, err := testenv.FreeAddr()
	if err != nil {
		t.Fatal(err)
	}
	return addr
}

func httpGet(ctx context.Context, url string) (int, string) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, http.NoBody)
	if err != nil {
		return 0, err.Error()
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	// Write then rename, as editors and kubelet do, so the daemon never
	// reads a half-written file.
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

func TestE2ERunWatchesReconcilesAndReloads(t *testing.T) {
	dir := t.TempDir()
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := env.WriteKubeconfig(kubeconfig); err != nil {
		t.Fatal(err)
	}
	ns := env.CreateNamespace(t, "e2e-run")
	cfgPath := filepath.Join(dir, "crowsnest.yaml")
	cfg := "apiVersion: crowsnest.dev/v1alpha1\nkind: Config\nlog:\n  level: debug\ncontroller:\n  workers: 2\n"
	writeFile(t, cfgPath, cfg)
	metricsAddr, probeAddr := freeAddr(t), freeAddr(t)
	d := startDaemon(t, "--kubeconfig", kubeconfig, "--config", cfgPath, "--namespace", ns,
		"--metrics-bind-address", metricsAddr, "--health-probe-bind-address", probeAddr, "--log-format", "json")

	waitFor(t, "/readyz to answer 200", func() bool {
		code, _ := httpGet(t.Context(), "http://"+probeAddr+"/readyz")
		return code == http.StatusOK
	})
	if code, _ := httpGet(t.Context(), "http://"+probeAddr+"/healthz"); code != http.StatusOK {
		t.Errorf("/healthz = %d", code)
	}

	dyn, err := dynamic.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	app := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "argoproj.io/v1alpha1", "kind": "Application",
		"metadata": map[string]any{"name": "web", "namespace": ns},
		"spec": map[string]any{
			"project":     "default",
			"source":      map[string]any{"repoURL": "https://git.example/a.git"},
			"destination": map[string]any{"server": "https://kubernetes.default.svc", "namespace": "web"},
		},
	}}
	if _, err := dyn.Resource(watcher.ApplicationsResource).Namespace(ns).Create(t.Context(), app, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	d.waitLog(t, `"msg":"application observed"`, `"app":"`+ns+`/web"`)
	waitFor(t, "the reconcile to be counted on /metrics", func() bool {
		_, body := httpGet(t.Context(), "http://"+metricsAddr+"/metrics")
		return strings.Contains(body, `crowsnest_reconcile_total{result="success"} 1`) &&
			strings.Contains(body, `crowsnest_watch_events_total{kind="Application",type="added"} 1`)
	})

	// A valid change is applied live: debug logging turns off, and every
	// application is re-evaluated under the new config.
	writeFile(t, cfgPath, strings.Replace(cfg, "level: debug", "level: info", 1))
	d.waitLog(t, `"msg":"config reloaded"`)
	waitFor(t, "the reload to requeue the application", func() bool {
		_, body := httpGet(t.Context(), "http://"+metricsAddr+"/metrics")
		return strings.Contains(body, `crowsnest_reconcile_total{result="success"} 2`)
	})
	// A broken change is rejected, loudly, and the old config stays.
	writeFile(t, cfgPath, cfg+"controller:\n  workers: many\n")
	d.waitLog(t, `"msg":"config reload rejected"`)
	waitFor(t, "the rejected reload to be counted", func() bool {
		_, body := httpGet(t.Context(), "http://"+metricsAddr+"/metrics")
		return strings.Contains(body, `crowsnest_config_reloads_total{result="error"} 1`)
	})
	if code, _ := httpGet(t.Context(), "http://"+probeAddr+"/readyz"); code != http.StatusOK {
		t.Errorf("/readyz after a rejected reload = %d, want 200", code)
	}

	// SIGTERM stops the daemon cleanly.
	if err := d.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-d.done:
		if err != nil {
			t.Errorf("crowsnest exited with %v after SIGTERM, want 0", err)
		}
		d.done <- err // for the cleanup
	case <-time.After(waitTimeout):
		t.Fatal("crowsnest did not exit after SIGTERM")
	}
}

func TestE2ERunRejectsBadFlags(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{name: "bad selector", args: []string{"--selector", "a in (b", "--apps-dir", t.TempDir()}, want: "watch.selector"},
		{name: "bad log level", args: []string{"--log-level", "loud", "--apps-dir", t.TempDir()}, want: "log.level"},
		{name: "leader election without a namespace", args: []string{"--leader-elect", "--apps-dir", t.TempDir()}, want: "leaderElection.leaseNamespace"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := execute(t, append([]string{"run", "--metrics-bind-address", "0", "--health-probe-bind-address", "0"}, tt.args...)...)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("run %v: error = %v, want one naming %q", tt.args, err, tt.want)
			}
		})
	}
}
