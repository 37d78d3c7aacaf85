package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/crowsnest-dev/crowsnest/internal/testenv"
)

var (
	env *testenv.Env
	// binary is crowsnest built once for the end-to-end tests.
	binary string
)

func TestMain(m *testing.M) {
	os.Exit(func() int {
		dir, err := os.MkdirTemp("", "crowsnest-bin-")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer os.RemoveAll(dir)
		binary = filepath.Join(dir, "crowsnest")
		build := exec.Command("go", "build", "-race", "-o", binary, ".")
		build.Stdout, build.Stderr = os.Stderr, os.Stderr
		if err := build.Run(); err != nil {
			fmt.Fprintln(os.Stderr, "building crowsnest:", err)
			return 1
		}
		return testenv.RunMain(m, &env)
	}())
}
