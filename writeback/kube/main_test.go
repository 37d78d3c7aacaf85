package kube

import (
	"flag"
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/crowsnest-dev/crowsnest/internal/testenv"
)

// env is the control plane the write-back tests patch Applications on.
var env *testenv.Env

// TestMain shares one control plane, except when the binary only lists
// tests or fuzzes: then none starts.
func TestMain(m *testing.M) {
	flag.Parse()
	for _, name := range []string{"test.list", "test.fuzz", "test.fuzzworker"} {
		if f := flag.Lookup(name); f != nil && f.Value.String() != "" && f.Value.String() != "false" {
			goleak.VerifyTestMain(m)
			return
		}
	}
	os.Exit(testenv.RunMain(m, &env))
}
