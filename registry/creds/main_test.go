package creds_test

import (
	"flag"
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/crowsnest-dev/crowsnest/internal/testenv"
)

// env is the control plane for the pullsecret: and secret: tests.
var env *testenv.Env

// TestMain shares one control plane, except when the binary only lists
// tests or fuzzes (fuzz workers are this binary too): then none starts.
func TestMain(m *testing.M) {
	flag.Parse()
	if flagSet("test.list") || flagSet("test.fuzz") || flagSet("test.fuzzworker") {
		goleak.VerifyTestMain(m)
		return
	}
	os.Exit(testenv.RunMain(m, &env))
}

func flagSet(name string) bool {
	f := flag.Lookup(name)
	return f != nil && f.Value.String() != "" && f.Value.String() != "false"
}
