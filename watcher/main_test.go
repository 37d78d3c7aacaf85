package watcher_test

import (
	"os"
	"testing"

	"github.com/crowsnest-dev/crowsnest/internal/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) { os.Exit(testenv.RunMain(m, &env)) }
