package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/crowsnest-dev/crowsnest/internal/backoff"
	"github.com/crowsnest-dev/crowsnest/internal/testenv"
)

// buildCrowsnest builds the binary under test from this module's
// cmd/crowsnest (with `make build`'s flags) into dir.
func buildCrowsnest(ctx context.Context, moduleRoot, dir string) (string, error) {
	bin := filepath.Join(dir, "crowsnest")
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-ldflags", "-s -w", "-o", bin, "./cmd/crowsnest")
	cmd.Dir = moduleRoot
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building crowsnest: %w\n%s", err, out)
	}
	return bin, nil
}

// daemon is one `crowsnest run` process.
type daemon struct {
	proc        *testenv.Process
	started     time.Time
	metricsAddr string
	probeAddr   string
	webhookAddr string
	pprofAddr   string
	logPath     string

	// Peaks of the anonymous (heap, stacks) and file-backed (the
	// binary's pages) parts of RSS, sampled every 20 ms: VmHWM does not
	// split them.
	peakMu   sync.Mutex
	peakAnon int64
	peakFile int64
}

// daemonOptions are what differs between the rounds' processes.
type daemonOptions struct {
	bin        string
	dir        string // kubeconfig, config and log live here
	kubeconfig string
	config     string
	namespace  string
	extraArgs  []string
	env        []string
}

func startDaemon(o daemonOptions) (*daemon, error) {
	addrs := make([]string, 4)
	for i := range addrs {
		a, err := freeAddr()
		if err != nil {
			return nil, err
		}
		addrs[i] = a
	}
	d := &daemon{metricsAddr: addrs[0], probeAddr: addrs[1], webhookAddr: addrs[2], pprofAddr: addrs[3],
		logPath: filepath.Join(o.dir, "crowsnest.log")}
	// A round's log starts empty (testenv.Process appends).
	if err := os.Remove(d.logPath); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	args := append([]string{"run",
		"--kubeconfig", o.kubeconfig, "--config", o.config, "--namespace", o.namespace,
		"--argocd-namespace", o.namespace, "--leader-election-namespace", o.namespace,
		"--metrics-bind-address", d.metricsAddr, "--health-probe-bind-address", d.probeAddr,
		"--webhook-bind-address", d.webhookAddr, "--pprof-bind-address", d.pprofAddr,
		"--git-cache-dir", filepath.Join(o.dir, "git-cache"), "--log-format", "json",
	}, o.extraArgs...)
	// The daemon dies with the harness even if the harness is killed
	// (testenv.Process sets that up).
	d.proc = &testenv.Process{Name: "crowsnest", Path: o.bin, Args: args, LogPath: d.logPath,
		Env: append(os.Environ(), o.env...), StopGrace: 15 * time.Second}
	d.started = time.Now()
	if err := d.proc.Start(); err != nil {
		return nil, err
	}
	go d.sampleRSS()
	return d, nil
}

func (d *daemon) sampleRSS() {
	path := fmt.Sprintf("/proc/%d/status", d.proc.Pid())
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-d.proc.Done():
			return
		case <-tick.C:
		}
		b, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		anon, file := statusKiB(b, "RssAnon:"), statusKiB(b, "RssFile:")
		d.peakMu.Lock()
		d.peakAnon, d.peakFile = max(d.peakAnon, anon), max(d.peakFile, file)
		d.peakMu.Unlock()
	}
}

// statusKiB reads a "Name:   123 kB" line of /proc/<pid>/status.
func statusKiB(status []byte, field string) int64 {
	for _, line := range strings.Split(string(status), "\n") {
		if v, ok := strings.CutPrefix(line, field); ok {
			n, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return n
		}
	}
	return 0
}

// stop ends the process with SIGTERM (SIGKILL after 15 s).
func (d *daemon) stop() { _ = d.proc.Stop() }

// exited returns an error when the process has ended.
func (d *daemon) exited() error {
	select {
	case <-d.proc.Done():
		return fmt.Errorf("crowsnest exited (%w); log tail:\n%s", d.proc.Err(), tail(d.logPath, 3000))
	default:
		return nil
	}
}

// waitReady waits for /readyz.
func (d *daemon) waitReady(ctx context.Context) error {
	for {
		if err := d.exited(); err != nil {
			return err
		}
		if code, _, err := httpGet(ctx, "http://"+d.probeAddr+"/readyz"); err == nil && code == http.StatusOK {
			return nil
		}
		if err := backoff.Sleep(ctx, 50*time.Millisecond); err != nil {
			return fmt.Errorf("crowsnest not ready: %w", err)
		}
	}
}

// procStats is what the kernel says about the process.
type procStats struct {
	CPUSeconds float64
	PeakRSSKiB int64
	// Sampled peaks of RSS's parts since the last reset.
	PeakAnonKiB, PeakFileKiB int64
}

// clockTicks is USER_HZ, the unit of /proc/<pid>/stat times; the kernel
// fixes it at 100 on every architecture Go supports on Linux.
const clockTicks = 100

func (d *daemon) stats() (procStats, error) {
	pid := d.proc.Pid()
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return procStats{}, err
	}
	// Fields after the command name (which may hold spaces) start at
	// field 3; utime and stime are fields 14 and 15.
	s := string(stat)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(fields) < 13 {
		return procStats{}, fmt.Errorf("unexpected /proc/%d/stat: %q", pid, s)
	}
	utime, err1 := strconv.ParseInt(fields[11], 10, 64)
	stime, err2 := strconv.ParseInt(fields[12], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return procStats{}, err
	}
	st := procStats{CPUSeconds: float64(utime+stime) / clockTicks}
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return procStats{}, err
	}
	st.PeakRSSKiB = statusKiB(status, "VmHWM:")
	d.peakMu.Lock()
	st.PeakAnonKiB, st.PeakFileKiB = d.peakAnon, d.peakFile
	d.peakMu.Unlock()
	return st, nil
}

// resetPeakRSS starts a new peak-RSS period (writing 5 to clear_refs
// resets VmHWM to the current RSS). It reports whether that worked.
func (d *daemon) resetPeakRSS() bool {
	d.peakMu.Lock()
	d.peakAnon, d.peakFile = 0, 0
	d.peakMu.Unlock()
	return os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", d.proc.Pid()), []byte("5"), 0) == nil
}

// metrics scrapes crowsnest's /metrics.
func (d *daemon) metrics(ctx context.Context) (promSamples, error) {
	code, body, err := httpGet(ctx, "http://"+d.metricsAddr+"/metrics")
	if err != nil {
		return nil, err
	}
	if code != http.StatusOK {
		return nil, fmt.Errorf("GET /metrics: %d", code)
	}
	return parseProm(body), nil
}

// profile saves a CPU profile of the next seconds to path.
func (d *daemon) profile(ctx context.Context, kind string, seconds int, path string) error {
	url := "http://" + d.pprofAddr + "/debug/pprof/" + kind
	if seconds > 0 {
		url += "?seconds=" + strconv.Itoa(seconds)
	}
	code, body, err := httpGet(ctx, url)
	if err != nil {
		return err
	}
	if code != http.StatusOK {
		return fmt.Errorf("GET %s: %d %s", url, code, body)
	}
	return os.WriteFile(path, []byte(body), 0o644)
}

// promSamples maps a sample's name and labels, as written in the text
// format (`name{a="b"}`), to its value.
type promSamples map[string]float64

// parseProm reads the Prometheus text format's samples; comments and
// malformed lines are skipped.
func parseProm(body string) promSamples {
	out := promSamples{}
	sc := bufio.NewScanner(strings.NewReader(body))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			continue
		}
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			continue
		}
		out[line[:i]] = v
	}
	return out
}

// sum adds the samples of metric, grouped by the value of label by (""
// for one group).
func (p promSamples) sum(metric, by string) map[string]float64 {
	out := map[string]float64{}
	for key, v := range p {
		name, labels, _ := strings.Cut(key, "{")
		if name != metric {
			continue
		}
		out[labelValue(labels, by)] += v
	}
	return out
}

// labelValue returns the value of label in `a="x",b="y"}`.
func labelValue(labels, label string) string {
	if label == "" {
		return ""
	}
	for _, part := range strings.Split(strings.TrimSuffix(labels, "}"), ",") {
		if v, ok := strings.CutPrefix(part, label+"="); ok {
			return strings.Trim(v, `"`)
		}
	}
	return ""
}

func httpGet(ctx context.Context, url string) (int, string, error) {
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, http.NoBody)
	if err != nil {
		return 0, "", err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body), err
}

func freeAddr() (string, error) { return testenv.FreeAddr() }

// tail returns the last n bytes of a file.
func tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}
