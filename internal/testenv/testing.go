package testenv

import (
	"context"
	"fmt"
	"os"
	"testing"

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
	tb.Cleanup(e.Stop)
	return e
}

// RunMain starts one control plane shared by every test of a package, runs
// the tests and stops it: `func TestMain(m *testing.M) { os.Exit(testenv.RunMain(m, &env)) }`.
// Tests keep apart by using namespaces of their own (see CreateNamespace).
func RunMain(m *testing.M, env **Env) int {
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
	defer e.Stop()
	*env = e
	return m.Run()
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
