//go:build unix

package creds

import (
	"os/exec"
	"syscall"
)

// killProcessGroup runs the command in a process group of its own and
// kills the whole group on timeout, so a script's children (curl, sleep)
// do not outlive it.
func killProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
}
