//go:build !unix

package creds

import "os/exec"

// killProcessGroup keeps exec's default: only the script itself is killed.
func killProcessGroup(*exec.Cmd) {}
