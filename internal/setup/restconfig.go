package setup

import (
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/crowsnest-dev/crowsnest/config"
)

// RestConfig builds the kube client config from kubeconfig (--kubeconfig),
// $KUBECONFIG or the in-cluster service account, with the configured rate
// limits, for every command that reads a cluster.
func RestConfig(kubeconfig string, cfg *config.Config, userAgent string) (*rest.Config, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = kubeconfig
	rc, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("loading kube config (--kubeconfig, $KUBECONFIG or in-cluster): %w", err)
	}
	rc.QPS = float32(cfg.Controller.KubeQPS)
	rc.Burst = cfg.Controller.KubeBurst
	rc.UserAgent = userAgent
	// Built-in kinds (Events, ConfigMaps, Secrets, Leases) travel as
	// protobuf, as Kubernetes' own controllers send them: cheaper to
	// encode and decode than JSON on both ends, and a cold start sends an
	// Event per update. Clients of Applications (dynamic.ConfigFor) speak
	// JSON whatever this says; custom resources have no protobuf.
	rc.ContentType = runtime.ContentTypeProtobuf
	rc.AcceptContentTypes = runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON
	return rc, nil
}
