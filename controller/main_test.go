package controller_test

import (
	"os"
	"testing"

	"github.com/crowsnest-dev/crowsnest/internal/testenv"
)

var env *testenv.Env

// TestMain shares one control plane and checks that no goroutine outlives
// the tests: engines, informers and leader electors stop on cancel.
func TestMain(m *testing.M) { os.Exit(testenv.RunMain(m, &env)) }
