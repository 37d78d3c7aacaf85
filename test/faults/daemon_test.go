package faults

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/crowsnest-dev/crowsnest/internal/testenv"
	"github.com/crowsnest-dev/crowsnest/internal/testwait"
)

// daemon is one crowsnest replica: a `crowsnest run` process that the test
// can SIGKILL, stop and start again with the same flags, the way a kubelet
// restarts a container. Its log lines are kept across restarts.
type daemon struct {
	name        string
	args        []string
	probeAddr   string
	metricsAddr string

	mu    sync.Mutex
	lines []logLine
	cmd   *exec.Cmd
	done  chan struct{} // closed when the current process has exited
	runs  int
	// signaled is set while the test stops the process itself.
	signaled bool
}

// logLine is one line of a daemon's log, with the run (process) it came
// from, counted from 1.
type logLine struct {
	run  int
	text string
}

// newDaemon prepares a replica with the given `run` flags; start runs it.
// Every process left is killed when the test ends.
func newDaemon(t *testing.T, name string, args ...string) *daemon {
	t.Helper()
	d := &daemon{name: name, probeAddr: freeAddr(t), metricsAddr: freeAddr(t)}
	d.args = append([]string{"run", "--health-probe-bind-address", d.probeAddr, "--metrics-bind-address", d.metricsAddr,
		"--webhook-bind-address", "0", "--log-format", "json"}, args...)
	t.Cleanup(func() {
		d.kill(t)
		if t.Failed() {
			t.Logf("%s log (last 150 lines):\n%s", d.name, d.tail(150))
		}
	})
	return d
}

// start runs a new process; the previous one must have exited.
func (d *daemon) start(t *testing.T) {
	t.Helper()
	if err := d.startProcess(); err != nil {
		t.Fatal(err)
	}
}

// startProcess is start for goroutines other than the test's.
func (d *daemon) startProcess() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.cmd != nil {
		return fmt.Errorf("%s: start while running", d.name)
	}
	cmd := exec.Command(binary, d.args...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return err
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting %s: %w", d.name, err)
	}
	d.runs++
	run := d.runs
	done := make(chan struct{})
	d.cmd, d.done = cmd, done
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			d.mu.Lock()
			d.lines = append(d.lines, logLine{run: run, text: sc.Text()})
			d.mu.Unlock()
		}
		_, _ = io.Copy(io.Discard, stderr)
		_ = cmd.Wait()
		close(done)
	}()
	return nil
}

// supervise starts again, like a kubelet, every replica whose process
// ended by itself (a lost lease ends the process on purpose), until the
// test ends; it returns how many restarts it made so far.
func supervise(t *testing.T, ds ...*daemon) func() int {
	t.Helper()
	var (
		mu       sync.Mutex
		restarts int
	)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		tick := time.NewTicker(200 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			for _, d := range ds {
				if !d.exited() {
					continue
				}
				if err := d.startProcess(); err != nil {
					t.Errorf("restarting %s: %v", d.name, err)
					continue
				}
				mu.Lock()
				restarts++
				mu.Unlock()
			}
		}
	})
	t.Cleanup(func() { close(stop); wg.Wait() })
	return func() int {
		mu.Lock()
		defer mu.Unlock()
		return restarts
	}
}

// kill sends SIGKILL and waits for the process to be gone; a crash, not a
// shutdown.
func (d *daemon) kill(t *testing.T) {
	t.Helper()
	d.signal(t, syscall.SIGKILL)
}

func (d *daemon) signal(t *testing.T, sig syscall.Signal) {
	t.Helper()
	d.mu.Lock()
	cmd, done := d.cmd, d.done
	d.signaled = true // not an exit of its own: supervise leaves it
	d.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Signal(sig)
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		_ = cmd.Process.Kill()
		<-done
		t.Errorf("%s did not exit within 60s of %v", d.name, sig)
	}
	d.mu.Lock()
	d.cmd, d.done, d.signaled = nil, nil, false
	d.mu.Unlock()
}

// exited reports whether the current process ended by itself (e.g. it lost
// its lease), and clears it so that start can run a new one.
func (d *daemon) exited() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.cmd == nil || d.signaled {
		return false
	}
	select {
	case <-d.done:
		d.cmd, d.done = nil, nil
		return true
	default:
		return false
	}
}

// running reports whether a process is running.
func (d *daemon) running() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.cmd == nil {
		return false
	}
	select {
	case <-d.done:
		return false
	default:
		return true
	}
}

// ready reports whether /readyz answers 200.
func (d *daemon) ready(ctx context.Context) bool {
	code, _ := httpGet(ctx, "http://"+d.probeAddr+"/readyz")
	return code == http.StatusOK
}

// waitReady waits until /readyz answers 200.
func (d *daemon) waitReady(t *testing.T) {
	t.Helper()
	testwait.Within(t, d.name+" /readyz 200", 90*time.Second, func() bool { return d.ready(t.Context()) })
}

// deliveryAttempts sums the current process's notification delivery
// attempts (crowsnest_notify_deliveries_total) with any of the results
// (e.g. "failed", "rate_limited").
func (d *daemon) deliveryAttempts(ctx context.Context, results ...string) float64 {
	const name = "crowsnest_notify_deliveries_total"
	_, body := httpGet(ctx, "http://"+d.metricsAddr+"/metrics")
	sum := 0.0
	for line := range strings.SplitSeq(body, "\n") {
		series, value, ok := strings.Cut(line, " ")
		if !ok || !strings.HasPrefix(series, name+"{") {
			continue
		}
		if !slices.ContainsFunc(results, func(r string) bool { return strings.Contains(series, `result="`+r+`"`) }) {
			continue
		}
		if v, err := strconv.ParseFloat(value, 64); err == nil {
			sum += v
		}
	}
	return sum
}

// count returns how many log lines (of every run) contain all parts.
func (d *daemon) count(parts ...string) int {
	n := 0
	for _, l := range d.logLines() {
		if containsAll(l.text, parts) {
			n++
		}
	}
	return n
}

// countRun is count for one run only.
func (d *daemon) countRun(run int, parts ...string) int {
	n := 0
	for _, l := range d.logLines() {
		if l.run == run && containsAll(l.text, parts) {
			n++
		}
	}
	return n
}

// run returns the number of the current (or last) process, from 1.
func (d *daemon) run() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.runs
}

func (d *daemon) logLines() []logLine {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]logLine(nil), d.lines...)
}

func (d *daemon) tail(n int) string {
	lines := d.logLines()
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	var b strings.Builder
	for _, l := range lines {
		fmt.Fprintf(&b, "[run %d] %s\n", l.run, l.text)
	}
	return b.String()
}

func containsAll(s string, parts []string) bool {
	for _, p := range parts {
		if !strings.Contains(s, p) {
			return false
		}
	}
	return true
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
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, http.NoBody)
	if err != nil {
		return 0, err.Error()
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return resp.StatusCode, string(body)
}
