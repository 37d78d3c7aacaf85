package controller_test

import (
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/crowsnest-dev/crowsnest/internal/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) {
	code := testenv.RunMain(m, &env)
	if code == 0 {
		// Engines, informers and leader electors must all stop on cancel.
		// Idle keep-alive connections of client-go's shared transports and
		// klog's flush daemon are process-wide and expected.
		if err := goleak.Find(
			goleak.IgnoreTopFunction("k8s.io/klog/v2.(*flushDaemon).run.func1"),
			goleak.IgnoreTopFunction("internal/poll.runtime_pollWait"),
			goleak.IgnoreAnyFunction("net/http.(*persistConn).writeLoop"),
			goleak.IgnoreAnyFunction("net/http.(*persistConn).readLoop"),
			goleak.IgnoreAnyFunction("golang.org/x/net/http2.(*ClientConn).readLoop"),
			goleak.IgnoreAnyFunction("k8s.io/client-go/util/workqueue.(*Type).updateUnfinishedWorkLoop"),
		); err != nil {
			os.Stderr.WriteString("goroutine leak: " + err.Error() + "\n")
			code = 1
		}
	}
	os.Exit(code)
}
