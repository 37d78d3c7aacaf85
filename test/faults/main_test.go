package faults

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
	// binary is crowsnest, built once (with the race detector) for every
	// scenario.
	binary string
)

// TestMain builds crowsnest, shares one control plane between the
// scenarios (they keep apart by namespace and run one after another, since
// one of them restarts the apiserver), and prints the fault table.
func TestMain(m *testing.M) {
	os.Exit(func() int {
		// The binary is built here, out of the test cache's sight: each
		// scenario reads the module's sources (newWorld) so the cache
		// keys on them.
		dir, err := os.MkdirTemp("", "crowsnest-faults-")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer os.RemoveAll(dir)
		binary = filepath.Join(dir, "crowsnest")
		build := exec.Command("go", "build", "-race", "-o", binary, "github.com/crowsnest-dev/crowsnest/cmd/crowsnest")
		build.Stdout, build.Stderr = os.Stderr, os.Stderr
		if err := build.Run(); err != nil {
			fmt.Fprintln(os.Stderr, "building crowsnest:", err)
			return 1
		}
		code := testenv.RunMain(m, &env)
		if err := writeReport(os.Stdout, os.Getenv("FAULTS_REPORT")); err != nil {
			fmt.Fprintln(os.Stderr, "writing the fault report:", err)
			return 1
		}
		return code
	}())
}
