package testenv

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"time"
)

// stopGrace is how long a process gets to exit after SIGTERM before it is
// killed; etcd and kube-apiserver shut down in well under a second.
const stopGrace = 10 * time.Second

// Process is one binary a test environment runs (etcd, kube-apiserver;
// internal/argocdenv's Argo CD and its companions, internal/testreg's
// docker-registry, the benchmark's crowsnest), its output in a log file,
// killed if the test binary dies.
type Process struct {
	Name    string
	Path    string
	Args    []string
	LogPath string
	// Env is the environment (nil: the test's); Dir the working folder.
	Env []string
	Dir string
	// Group gives the process a process group of its own, which Stop
	// signals as a whole: for binaries that start children.
	Group bool
	// StopGrace is how long Stop waits after SIGTERM before SIGKILL;
	// zero is stopGrace.
	StopGrace time.Duration

	cmd  *exec.Cmd
	pid  int
	done chan struct{}
	err  error // set when done is closed
}

// Start starts the process.
func (p *Process) Start() error {
	logFile, err := os.OpenFile(p.LogPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("opening %s log: %w", p.Name, err)
	}
	cmd := exec.Command(p.Path, p.Args...)
	cmd.Env, cmd.Dir = p.Env, p.Dir
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	// The child dies with the test binary even if the test is killed, so no
	// control plane is left running on the machine.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: p.Group}
	if err := cmd.Start(); err != nil {
		_ = logFile.Close()
		return fmt.Errorf("starting %s: %w", p.Name, err)
	}
	p.cmd, p.pid = cmd, cmd.Process.Pid
	p.done = make(chan struct{})
	go func() {
		p.err = cmd.Wait()
		_ = logFile.Close()
		close(p.done)
	}()
	return nil
}

// Running reports whether the process was started and has not exited.
func (p *Process) Running() bool {
	if p.cmd == nil {
		return false
	}
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

// Pid is the id of the process last started; 0 before Start.
func (p *Process) Pid() int { return p.pid }

// Done is closed when the started process has exited.
func (p *Process) Done() <-chan struct{} { return p.done }

// Err is how the process ended, once Done is closed.
func (p *Process) Err() error {
	<-p.done
	return p.err
}

// Stop sends SIGTERM and, after StopGrace, SIGKILL (to the process group
// with Group); it returns once the process has exited.
func (p *Process) Stop() error {
	if !p.Running() {
		return nil
	}
	pid := p.cmd.Process.Pid
	if p.Group {
		pid = -pid
	}
	_ = syscall.Kill(pid, syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(cmp.Or(p.StopGrace, stopGrace)):
		_ = syscall.Kill(pid, syscall.SIGKILL)
		<-p.done
	}
	p.cmd = nil
	return nil
}

// WaitReady polls check until it succeeds, the process exits or ctx ends.
func (p *Process) WaitReady(ctx context.Context, check func(context.Context) error) error {
	var last error
	for {
		if last = check(ctx); last == nil {
			return nil
		}
		select {
		case <-p.done:
			return fmt.Errorf("%s exited before it was ready (%w); log tail:\n%s", p.Name, p.err, p.LogTail())
		case <-ctx.Done():
			return fmt.Errorf("%s not ready: %w (last check: %w); log tail:\n%s", p.Name, ctx.Err(), last, p.LogTail())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// LogTail returns the last lines of the process log, for error messages.
func (p *Process) LogTail() string {
	data, err := os.ReadFile(p.LogPath)
	if err != nil {
		return "(no log: " + err.Error() + ")"
	}
	const keep = 4000
	if len(data) > keep {
		data = data[len(data)-keep:]
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			data = data[i+1:]
		}
	}
	return string(data)
}

// freePort is FreePort, for etcd's and kube-apiserver's ports.
func freePort() (int, error) { return FreePort() }

func hostPort(port int) string {
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
}
