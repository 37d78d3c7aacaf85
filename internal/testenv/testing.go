package testenv

import (
	"context"
	"flag"
	"fmt"
	"os"
	"testing"

	"go.uber.org/goleak"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// New starts a control plane for one test and stops it when the test ends.
func New(tb testing.TB) *Env {
	tb.Helper()
	e, err := Start(tb.Context(), tb.TempDir())
	if err != nil {
		tb.Fatalf("starting test control plane: %v", err)
	}
	tb.Cleanup(func() {
		e.Stop()
		if e.reportPruned() {
			tb.Error("the apiserver dropped fields Argo CD's schema does not have (see above)")
		}
	})
	return e
}

// RunMain starts one control plane shared by every test of a package, runs
// the tests and stops it: `func TestMain(m *testing.M) { os.Exit(testenv.RunMain(m, &env)) }`.
// Tests keep apart by using namespaces of their own (see CreateNamespace).
//
// A test binary that only lists tests or fuzzes (fuzz workers are the test
// binary too) starts no control plane: fuzz targets do not use it, and a
// control plane per fuzz worker would swamp the machine.
func RunMain(m *testing.M, env **Env) int {
	if !flag.Parsed() {
		flag.Parse()
	}
	if flagSet("test.list") || flagSet("test.fuzz") || flagSet("test.fuzzworker") {
		code := m.Run()
		if code == 0 {
			if err := goleak.Find(LeakOptions()...); err != nil {
				fmt.Fprintln(os.Stderr, "goroutine leak after the tests:", err)
				return 1
			}
		}
		return code
	}
	dir, err := os.MkdirTemp("", "crowsnest-testenv-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "testenv:", err)
		return 1
	}
	defer os.RemoveAll(dir)
	e, err := Start(context.Background(), dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, "testenv: starting test control plane:", err)
		return 1
	}
	*env = e
	code := m.Run()
	e.Stop()
	if e.reportPruned() && code == 0 {
		code = 1
	}
	if code == 0 {
		if err := goleak.Find(LeakOptions()...); err != nil {
			fmt.Fprintln(os.Stderr, "goroutine leak after the tests:", err)
			return 1
		}
	}
	return code
}

func flagSet(name string) bool {
	f := flag.Lookup(name)
	return f != nil && f.Value.String() != "" && f.Value.String() != "false"
}

// LeakOptions are the goroutines goleak may find after tests that used
// client-go: idle keep-alive connections of its shared transports and
// klog's flush daemon are process-wide by design. Everything crowsnest
// starts (engines, informers, leader electors, servers) must be gone.
func LeakOptions() []goleak.Option {
	return []goleak.Option{
		goleak.IgnoreTopFunction("k8s.io/klog/v2.(*flushDaemon).run.func1"),
		goleak.IgnoreAnyFunction("net/http.(*persistConn).writeLoop"),
		goleak.IgnoreAnyFunction("net/http.(*persistConn).readLoop"),
		goleak.IgnoreAnyFunction("golang.org/x/net/http2.(*ClientConn).readLoop"),
	}
}

// CreateNamespace creates a namespace with a name derived from prefix and
// returns the generated name.
func (e *Env) CreateNamespace(tb testing.TB, prefix string) string {
	tb.Helper()
	cs, err := kubernetes.NewForConfig(e.Config)
	if err != nil {
		tb.Fatalf("building clientset: %v", err)
	}
	ns, err := cs.CoreV1().Namespaces().Create(tb.Context(), &corev1.Namespace{
		ObjectMeta: metav1.ObjectMeta{GenerateName: prefix + "-"},
	}, metav1.CreateOptions{})
	if err != nil {
		tb.Fatalf("creating namespace: %v", err)
	}
	return ns.Name
}
