package outbox_test

import (
	"os"
	"testing"

	"github.com/crowsnest-dev/crowsnest/internal/testenv"
)

// env is the control plane for the ConfigMap store tests.
var env *testenv.Env

// TestMain shares one control plane among the package's tests.
func TestMain(m *testing.M) { os.Exit(testenv.RunMain(m, &env)) }
