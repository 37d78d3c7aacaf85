// Package kubecoretest adapts a client-go clientset to kubecore's
// interfaces, for tests that build their fixtures with a clientset and
// hand the same client to the code under test. Only tests import it: the
// daemon never links the typed clientset.
package kubecoretest

import (
	"testing"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/crowsnest-dev/crowsnest/internal/kubecore"
)

// Wrap returns cs as a kubecore.Interface.
func Wrap(cs kubernetes.Interface) kubecore.Interface { return clientset{cs} }

type clientset struct{ cs kubernetes.Interface }

func (c clientset) ConfigMaps(ns string) kubecore.ConfigMapInterface {
	return c.cs.CoreV1().ConfigMaps(ns)
}

func (c clientset) Secrets(ns string) kubecore.SecretInterface { return c.cs.CoreV1().Secrets(ns) }

func (c clientset) Events(ns string) kubecore.EventInterface { return c.cs.CoreV1().Events(ns) }

func (c clientset) Leases(ns string) kubecore.LeaseInterface {
	return c.cs.CoordinationV1().Leases(ns)
}

// New returns a kubecore client for cfg, failing t if it cannot.
func New(tb testing.TB, cfg *rest.Config) *kubecore.Clientset {
	tb.Helper()
	c, err := kubecore.NewForConfig(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	return c
}
