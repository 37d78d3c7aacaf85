package pipeline_test

import (
	"os"
	"testing"

	"github.com/crowsnest-dev/crowsnest/internal/testenv"
)

// env is the control plane for the ConfigMap state tests.
var env *testenv.Env

// TestMain shares one control plane among the package's tests and checks
// that no goroutine outlives them: notifiers and outboxes stop on cancel.
func TestMain(m *testing.M) { os.Exit(testenv.RunMain(m, &env)) }
