package repocreds_test

import (
	"os"
	"testing"

	"github.com/crowsnest-dev/crowsnest/internal/testenv"
)

var env *testenv.Env

// TestMain shares one control plane (Argo CD's Secrets and known hosts
// ConfigMap live on a real apiserver) and checks that no goroutine
// outlives the tests.
func TestMain(m *testing.M) { os.Exit(testenv.RunMain(m, &env)) }
