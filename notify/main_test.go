package notify_test

import (
	"flag"
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/crowsnest-dev/crowsnest/internal/testenv"
)

// env is the control plane for the ConfigMap store tests.
var env *testenv.Env

// TestMain shares one control plane, except when the binary only lists
// tests or fuzzes: then none starts. Either way no goroutine may outlive
// the tests.
func TestMain(m *testing.M) {
	flag.Parse()
	if flagSet("test.list") || flagSet("test.fuzz") || flagSet("test.fuzzworker") {
		goleak.VerifyTestMain(m, testenv.LeakOptions()...)
		return
	}
	os.Exit(testenv.RunMain(m, &env))
}

func flagSet(name string) bool {
	f := flag.Lookup(name)
	return f != nil && f.Value.String() != "" && f.Value.String() != "false"
}
