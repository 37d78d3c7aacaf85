package faults

import (
	"bufio"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/crowsnest-dev/crowsnest/internal/testenv"
	"github.com/crowsnest-dev/crowsnest/internal/testreg"
)

// The hostile-input suite: what someone who may edit an Application (maybe
// another team), or who can reach crowsnest's endpoints, tries against it.
// Each row runs the crowsnest binary against real servers on 127.0.0.1 and
// measures from the outside what leaked (a secret or an internal answer
// where it must not be), what was lost (intended work that did not
// happen, a failure not reported) and what was credited to the wrong
// Application. Most rows run local mode (`run --apps-dir --once`); the
// ones about Secrets run against the apiserver.

// hostileTest starts a hostile-input test: in parallel with the others,
// its result keyed (for go test's cache) on the module's sources, which
// the crowsnest binary it runs is built from.
func hostileTest(t *testing.T) {
	t.Helper()
	t.Parallel()
	if err := testenv.TrackSources(); err != nil {
		t.Fatalf("reading the module's sources: %v", err)
	}
}

// Annotation keys the rows write.
const (
	annImageList   = "argocd-image-updater.argoproj.io/image-list"
	annWriteBack   = "argocd-image-updater.argoproj.io/write-back-method"
	annTarget      = "argocd-image-updater.argoproj.io/write-back-target"
	annGitRepo     = "argocd-image-updater.argoproj.io/git-repository"
	annGitBranch   = "argocd-image-updater.argoproj.io/git-branch"
	annPullSecret  = "argocd-image-updater.argoproj.io/app.pull-secret"
	annForceUpdate = "argocd-image-updater.argoproj.io/force-update"
)

// onceTimeout bounds one `run --once`: a pass of a few Applications takes
// seconds; one that has not ended by then is a row failure, not a hang.
const onceTimeout = 2 * time.Minute

// verdict is one row of the hostile-input table being measured. Each
// count and expectation fails the row (and the test) when it does not
// hold; a row whose test stops before done is recorded as a failure too.
type verdict struct {
	t        *testing.T
	row      hostileRow
	start    time.Time
	problems []string
	finished bool
}

func newVerdict(t *testing.T, attack, tried string) *verdict {
	t.Helper()
	v := &verdict{t: t, row: hostileRow{attack: attack, tried: tried, leaked: -1, lost: -1, wrong: -1}, start: time.Now()}
	t.Cleanup(func() {
		if !v.finished {
			v.problems = append(v.problems, "not measured: the test stopped before the row was done")
			v.record()
		}
	})
	return v
}

// since makes the row's time start at start, for rows that share a run
// made before them.
func (v *verdict) since(start time.Time) *verdict {
	v.start = start
	return v
}

func (v *verdict) problem(format string, args ...any) {
	v.t.Helper()
	msg := fmt.Sprintf(format, args...)
	v.t.Errorf("%s: %s", v.row.attack, msg)
	v.problems = append(v.problems, msg)
}

// The counts start at -1, not measured (the table shows "-"); each call
// of leak, lose or credited measures its column, zero included.

// leak counts n secrets, internal answers or files found where they must
// not be.
func (v *verdict) leak(n int, format string, args ...any) {
	v.t.Helper()
	v.count(&v.row.leaked, n, "leaked: "+format, args...)
}

// lose counts n intended results that did not happen or were not
// reported.
func (v *verdict) lose(n int, format string, args ...any) {
	v.t.Helper()
	v.count(&v.row.lost, n, "lost: "+format, args...)
}

// credited counts the Events (or notifications) in wrong as results
// credited to the wrong Application.
func (v *verdict) credited(wrong []logEvent) {
	v.t.Helper()
	v.count(&v.row.wrong, len(wrong), "credited to the wrong Application: %v", wrong)
}

// loseUnless counts one lost result when ok is false.
func (v *verdict) loseUnless(ok bool, format string, args ...any) {
	v.t.Helper()
	n := 0
	if !ok {
		n = 1
	}
	v.lose(n, format, args...)
}

func (v *verdict) count(c *int, n int, format string, args ...any) {
	v.t.Helper()
	*c = max(*c, 0) + n
	if n > 0 {
		v.problem(format, args...)
	}
}

// expect fails the row when a claim of it (a refusal, an exit code, an
// error naming a limit) does not hold.
func (v *verdict) expect(ok bool, format string, args ...any) {
	v.t.Helper()
	if !ok {
		v.problem(format, args...)
	}
}

// answer sets what crowsnest did, as the table shows it.
func (v *verdict) answer(format string, args ...any) {
	v.row.answer = fmt.Sprintf(format, args...)
}

func (v *verdict) done() {
	v.finished = true
	v.record()
}

func (v *verdict) record() {
	v.row.took = time.Since(v.start)
	v.row.result = "pass"
	if len(v.problems) > 0 {
		v.row.result = "FAIL"
		v.row.answer = strings.TrimSpace(v.row.answer + " FAIL: " + strings.Join(v.problems, "; "))
	}
	v.t.Logf("row %q: leaked %d, lost %d, wrong Application %d: %s (%s)", v.row.attack, v.row.leaked, v.row.lost, v.row.wrong, v.row.result, v.row.answer)
	recordHostile(v.row)
}

// proc is one crowsnest process of a hostile row, its stderr (the log)
// kept line by line.
type proc struct {
	cmd  *exec.Cmd
	done chan struct{}
	// killed is set when wait gave up on the process.
	killed bool

	mu     sync.Mutex
	lines  []string
	stdout headWriter
}

// headWriter keeps the first maxStdout bytes written to it and counts the
// rest: a runaway output must not fill the test's memory.
type headWriter struct {
	mu    sync.Mutex
	head  []byte
	total int64
}

const maxStdout = 64 << 10

func (h *headWriter) Write(p []byte) (int, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.total += int64(len(p))
	if room := maxStdout - len(h.head); room > 0 {
		h.head = append(h.head, p[:min(room, len(p))]...)
	}
	return len(p), nil
}

// output returns the start of stdout and how many bytes were written.
func (p *proc) output() (string, int64) {
	p.stdout.mu.Lock()
	defer p.stdout.mu.Unlock()
	return string(p.stdout.head), p.stdout.total
}

// startCrowsnest runs the binary with args and the test process's
// environment plus env; the process is killed when the test ends.
func startCrowsnest(t *testing.T, env []string, args ...string) *proc {
	t.Helper()
	p := &proc{cmd: exec.Command(binary, args...), done: make(chan struct{})}
	p.cmd.Env = append(os.Environ(), env...)
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	stderr, err := p.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	p.cmd.Stdout = &p.stdout
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("starting crowsnest: %v", err)
	}
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 1<<20), 4<<20)
		for sc.Scan() {
			p.mu.Lock()
			p.lines = append(p.lines, sc.Text())
			p.mu.Unlock()
		}
		_, _ = io.Copy(io.Discard, stderr)
		_ = p.cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		p.stop()
		if t.Failed() {
			t.Logf("crowsnest %s log (last 60 lines):\n%s", strings.Join(args[:min(2, len(args))], " "), p.tail(60))
		}
	})
	return p
}

// stop kills the process if it still runs and waits for it.
func (p *proc) stop() {
	select {
	case <-p.done:
	default:
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

// wait waits for the process to exit, at most timeout (then it is killed
// and killed is set), and returns its exit code (-1 when killed).
func (p *proc) wait(t *testing.T, timeout time.Duration) int {
	t.Helper()
	select {
	case <-p.done:
	case <-time.After(timeout):
		p.killed = true
		p.stop()
	case <-t.Context().Done():
		p.killed = true
		p.stop()
	}
	return p.cmd.ProcessState.ExitCode()
}

func (p *proc) logLines() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.lines)
}

func (p *proc) tail(n int) string {
	lines := p.logLines()
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// count returns how many log lines contain all parts.
func (p *proc) count(parts ...string) int {
	n := 0
	for _, l := range p.logLines() {
		if containsAll(l, parts) {
			n++
		}
	}
	return n
}

// closing is the error `run` ended with (after "crowsnest: "), "" if none.
func (p *proc) closing() string {
	for _, l := range slices.Backward(p.logLines()) {
		if rest, ok := strings.CutPrefix(l, "crowsnest: "); ok {
			return rest
		}
	}
	return ""
}

// usage is the CPU time and peak memory (KiB) the exited process used.
func (p *proc) usage() (time.Duration, int64) {
	st := p.cmd.ProcessState
	if st == nil {
		return 0, 0
	}
	ru, _ := st.SysUsage().(*syscall.Rusage)
	if ru == nil {
		return st.UserTime() + st.SystemTime(), 0
	}
	return st.UserTime() + st.SystemTime(), ru.Maxrss
}

// logEvent is an Event as local mode logs it, or as the apiserver holds it.
type logEvent struct {
	App, Type, Reason, Message string
}

func (e logEvent) String() string { return e.App + " " + e.Reason + ": " + e.Message }

// events returns the Events local mode logged ("msg":"event").
func (p *proc) events() []logEvent {
	var out []logEvent
	for _, l := range p.logLines() {
		if !strings.Contains(l, `"msg":"event"`) {
			continue
		}
		var e struct{ App, Type, Reason, Message string }
		if json.Unmarshal([]byte(l), &e) == nil {
			out = append(out, logEvent(e))
		}
	}
	return out
}

// eventsOf returns the Events of app with reason ("" any).
func eventsOf(evs []logEvent, app, reason string) []logEvent {
	var out []logEvent
	for _, e := range evs {
		if e.App == app && (reason == "" || e.Reason == reason) {
			out = append(out, e)
		}
	}
	return out
}

// warnings returns the Warning Events of app.
func warnings(evs []logEvent, app string) []logEvent {
	var out []logEvent
	for _, e := range eventsOf(evs, app, "") {
		if e.Type == "Warning" {
			out = append(out, e)
		}
	}
	return out
}

// foreignEvents counts the Events whose message contains marker but that
// are not on owner: one Application's result credited to another.
func foreignEvents(evs []logEvent, owner, marker string) []logEvent {
	var out []logEvent
	for _, e := range evs {
		if e.App != owner && strings.Contains(e.Message, marker) {
			out = append(out, e)
		}
	}
	return out
}

// occurrences counts, per secret, the texts that contain it, and returns
// the total and a short description of the first one found.
func occurrences(texts []string, secrets ...string) (int, string) {
	n, first := 0, ""
	for _, s := range secrets {
		for _, t := range texts {
			if i := strings.Index(t, s); i >= 0 {
				n++
				if first == "" {
					first = fmt.Sprintf("%q in ...%s...", s, t[max(0, i-120):min(len(t), i+len(s)+40)])
				}
			}
		}
	}
	return n, first
}

// appFile is an Application as local mode reads it from a file.
type appFile struct {
	ns, name, project string
	// annotations are written double-quoted; raw is appended as is
	// (indented four spaces) for values that must not be strings.
	annotations map[string]string
	raw         string
	// source is the spec.source flow mapping.
	source string
	// running are the images (with tags) status.summary reports.
	running []string
}

func (a appFile) String() string {
	var ann strings.Builder
	keys := make([]string, 0, len(a.annotations))
	for k := range a.annotations {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintf(&ann, "    %s: %s\n", k, yamlString(a.annotations[k]))
	}
	if a.raw != "" {
		ann.WriteString("    " + a.raw + "\n")
	}
	project := a.project
	if project == "" {
		project = "default"
	}
	status := ""
	if len(a.running) > 0 {
		quoted := make([]string, len(a.running))
		for i, r := range a.running {
			quoted[i] = yamlString(r)
		}
		status = fmt.Sprintf("status:\n  summary: {images: [%s]}\n", strings.Join(quoted, ", "))
	}
	return fmt.Sprintf(`apiVersion: argoproj.io/v1alpha1
kind: Application
metadata:
  name: %s
  namespace: %s
  annotations:
%sspec:
  project: %s
  source: %s
  destination: {server: https://kubernetes.default.svc, namespace: %s}
%s`, a.name, a.ns, ann.String(), project, a.source, a.name, status)
}

// yamlString quotes s for YAML (JSON strings are YAML).
func yamlString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// writeApps writes each Application to its own file in a new folder.
func writeApps(t *testing.T, apps ...appFile) string {
	t.Helper()
	dir := t.TempDir()
	for _, a := range apps {
		writeTestFile(t, filepath.Join(dir, a.ns+"-"+a.name+".yaml"), a.String())
	}
	return dir
}

func writeTestFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

// onceOptions shape one `run --apps-dir --once`.
type onceOptions struct {
	// config is the config file's body after apiVersion and kind.
	config string
	env    []string
	args   []string
	// timeout bounds the pass (onceTimeout if zero).
	timeout time.Duration
}

// runOnce runs one local pass over dir to its end.
func runOnce(t *testing.T, dir string, o onceOptions) (*proc, int) {
	t.Helper()
	work := t.TempDir()
	cfg := filepath.Join(work, "crowsnest.yaml")
	writeTestFile(t, cfg, "apiVersion: crowsnest.dev/v1alpha1\nkind: Config\n"+o.config)
	args := append([]string{"run", "--apps-dir", dir, "--once", "--config", cfg,
		"--git-cache-dir", filepath.Join(work, "git-cache"), "--log-format", "json",
		"--metrics-bind-address", "0", "--health-probe-bind-address", "0", "--webhook-bind-address", "0"}, o.args...)
	p := startCrowsnest(t, o.env, args...)
	code := p.wait(t, cmp.Or(o.timeout, onceTimeout))
	return p, code
}

// startWithWebhook runs crowsnest in local mode over dir, polling hourly
// (so only a webhook refreshes), with a generic registry webhook whose
// secret is secret, at debug level; it returns the process and the
// webhook's and metrics' addresses.
func startWithWebhook(t *testing.T, dir, secret string) (p *proc, hookAddr, metricsAddr string) {
	t.Helper()
	work := t.TempDir()
	cfg := filepath.Join(work, "crowsnest.yaml")
	writeTestFile(t, cfg, `apiVersion: crowsnest.dev/v1alpha1
kind: Config
log: {level: debug}
registries:
  pollInterval: 1h
  webhook:
    sources:
    - {type: generic, secretEnv: CROWSNEST_HOSTILE_WEBHOOK_SECRET}
`)
	hookAddr, metricsAddr = freeAddr(t), freeAddr(t)
	p = startCrowsnest(t, []string{"CROWSNEST_HOSTILE_WEBHOOK_SECRET=" + secret}, "run", "--apps-dir", dir, "--config", cfg,
		"--git-cache-dir", filepath.Join(work, "git-cache"), "--log-format", "json", "--metrics-bind-address", metricsAddr,
		"--health-probe-bind-address", "0", "--webhook-bind-address", hookAddr)
	return p, hookAddr, metricsAddr
}

// pushImage pushes each tag of repo (created an hour apart, in order) and
// returns the image name.
func pushImage(t *testing.T, reg *testreg.OCI, repo string, tags ...string) string {
	t.Helper()
	t0 := time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)
	for i, tag := range tags {
		reg.Push(t, repo+":"+tag, testreg.Image(t, t0.Add(time.Duration(i)*time.Hour), "linux/amd64"))
	}
	return reg.Host() + "/" + repo
}
