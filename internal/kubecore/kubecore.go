package kubecore

import (
	"context"
	"fmt"
	"net/http"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/flowcontrol"
)

// Resource is the method set crowsnest uses of one namespaced resource of
// type T (list type L). The signatures are client-go's typed clients', so
// for example a clientset's CoreV1().ConfigMaps(ns) is a
// Resource[*corev1.ConfigMap, *corev1.ConfigMapList].
type Resource[T, L runtime.Object] interface {
	Create(ctx context.Context, obj T, opts metav1.CreateOptions) (T, error)
	Update(ctx context.Context, obj T, opts metav1.UpdateOptions) (T, error)
	Delete(ctx context.Context, name string, opts metav1.DeleteOptions) error
	Get(ctx context.Context, name string, opts metav1.GetOptions) (T, error)
	List(ctx context.Context, opts metav1.ListOptions) (L, error)
	Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error)
	Patch(ctx context.Context, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions, subresources ...string) (T, error)
}

// ConfigMapInterface is the ConfigMaps of a namespace.
type ConfigMapInterface = Resource[*corev1.ConfigMap, *corev1.ConfigMapList]

// SecretInterface is the Secrets of a namespace.
type SecretInterface = Resource[*corev1.Secret, *corev1.SecretList]

// EventInterface is the Events of a namespace.
type EventInterface = Resource[*corev1.Event, *corev1.EventList]

// LeaseInterface is the Leases of a namespace.
type LeaseInterface = Resource[*coordinationv1.Lease, *coordinationv1.LeaseList]

// ConfigMapsGetter is the part of Interface a package that only keeps
// ConfigMaps needs.
type ConfigMapsGetter interface {
	ConfigMaps(namespace string) ConfigMapInterface
}

// SecretsGetter is the part of Interface a package that only reads
// Secrets needs.
type SecretsGetter interface {
	Secrets(namespace string) SecretInterface
}

// EventsGetter is the part of Interface an Event recorder needs.
type EventsGetter interface {
	Events(namespace string) EventInterface
}

// LeasesGetter is the part of Interface leader election needs.
type LeasesGetter interface {
	Leases(namespace string) LeaseInterface
}

// Interface is every resource crowsnest uses through kubecore.
type Interface interface {
	ConfigMapsGetter
	SecretsGetter
	EventsGetter
	LeasesGetter
}

// Clientset is the Interface over an apiserver, plus discovery.
type Clientset struct {
	core, coordination *rest.RESTClient
}

var _ Interface = (*Clientset)(nil)

// NewForConfig returns a Clientset for cfg. Like client-go's clientset, its
// groups share one HTTP client and, when cfg has no rate limiter, one
// token bucket of cfg's QPS and Burst.
func NewForConfig(cfg *rest.Config) (*Clientset, error) {
	c := *cfg
	if c.UserAgent == "" {
		c.UserAgent = rest.DefaultKubernetesUserAgent()
	}
	if c.RateLimiter == nil && c.QPS > 0 {
		if c.Burst <= 0 {
			return nil, fmt.Errorf("building kube client: burst is required to be greater than 0 when RateLimiter is not set and QPS is set to greater than 0")
		}
		c.RateLimiter = flowcontrol.NewTokenBucketRateLimiter(c.QPS, c.Burst)
	}
	hc, err := rest.HTTPClientFor(&c)
	if err != nil {
		return nil, fmt.Errorf("building kube client: %w", err)
	}
	core, err := restClient(&c, hc, "/api", corev1.SchemeGroupVersion)
	if err != nil {
		return nil, err
	}
	coordination, err := restClient(&c, hc, "/apis", coordinationv1.SchemeGroupVersion)
	if err != nil {
		return nil, err
	}
	return &Clientset{core: core, coordination: coordination}, nil
}

func restClient(cfg *rest.Config, hc *http.Client, apiPath string, gv schema.GroupVersion) (*rest.RESTClient, error) {
	c := *cfg
	c.GroupVersion = &gv
	c.APIPath = apiPath
	c.NegotiatedSerializer = codecs.WithoutConversion()
	rc, err := rest.RESTClientForConfigAndClient(&c, hc)
	if err != nil {
		return nil, fmt.Errorf("building kube client for %s: %w", gv, err)
	}
	return rc, nil
}

// ConfigMaps of namespace.
func (c *Clientset) ConfigMaps(namespace string) ConfigMapInterface {
	return newResource[*corev1.ConfigMap, *corev1.ConfigMapList](c.core, "configmaps", namespace,
		func() *corev1.ConfigMap { return &corev1.ConfigMap{} }, func() *corev1.ConfigMapList { return &corev1.ConfigMapList{} })
}

// Secrets of namespace.
func (c *Clientset) Secrets(namespace string) SecretInterface {
	return newResource[*corev1.Secret, *corev1.SecretList](c.core, "secrets", namespace,
		func() *corev1.Secret { return &corev1.Secret{} }, func() *corev1.SecretList { return &corev1.SecretList{} })
}

// Events of namespace.
func (c *Clientset) Events(namespace string) EventInterface {
	return newResource[*corev1.Event, *corev1.EventList](c.core, "events", namespace,
		func() *corev1.Event { return &corev1.Event{} }, func() *corev1.EventList { return &corev1.EventList{} })
}

// Leases of namespace.
func (c *Clientset) Leases(namespace string) LeaseInterface {
	return newResource[*coordinationv1.Lease, *coordinationv1.LeaseList](c.coordination, "leases", namespace,
		func() *coordinationv1.Lease { return &coordinationv1.Lease{} }, func() *coordinationv1.LeaseList { return &coordinationv1.LeaseList{} })
}
