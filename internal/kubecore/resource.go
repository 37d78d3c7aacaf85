package kubecore

import (
	"context"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
)

// resource is the Resource of one namespace over a REST client, asking
// for protobuf as client-go's typed clients do for built-in kinds. It
// replaces client-go's gentype, whose package also holds the fake clients
// and so links client-go/testing, managed fields and the OpenAPI models
// (several megabytes of the binary, resident at run time) into the daemon.
type resource[T, L runtime.Object] struct {
	client    rest.Interface
	name      string // the resource, e.g. "configmaps"
	namespace string
	newObject func() T
	newList   func() L
}

func newResource[T, L runtime.Object](client rest.Interface, name, namespace string, newObject func() T, newList func() L) *resource[T, L] {
	return &resource[T, L]{client: client, name: name, namespace: namespace, newObject: newObject, newList: newList}
}

// on is a request for the resource in the namespace.
func (r *resource[T, L]) on(req *rest.Request) *rest.Request {
	return req.UseProtobufAsDefault().NamespaceIfScoped(r.namespace, r.namespace != "").Resource(r.name)
}

func (r *resource[T, L]) into(ctx context.Context, req *rest.Request) (T, error) {
	out := r.newObject()
	err := req.Do(ctx).Into(out)
	return out, err // the apiserver's error, for apierrors.Is*
}

func (r *resource[T, L]) Get(ctx context.Context, name string, opts metav1.GetOptions) (T, error) {
	return r.into(ctx, r.on(r.client.Get()).Name(name).VersionedParams(&opts, parameterCodec))
}

func (r *resource[T, L]) List(ctx context.Context, opts metav1.ListOptions) (L, error) {
	out := r.newList()
	err := r.on(r.client.Get()).VersionedParams(&opts, parameterCodec).Timeout(timeoutOf(opts)).Do(ctx).Into(out)
	return out, err // the apiserver's error, for apierrors.Is*
}

func (r *resource[T, L]) Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	opts.Watch = true
	return r.on(r.client.Get()).VersionedParams(&opts, parameterCodec).Timeout(timeoutOf(opts)).Watch(ctx) // as Get
}

func (r *resource[T, L]) Create(ctx context.Context, obj T, opts metav1.CreateOptions) (T, error) {
	return r.into(ctx, r.on(r.client.Post()).VersionedParams(&opts, parameterCodec).Body(obj))
}

func (r *resource[T, L]) Update(ctx context.Context, obj T, opts metav1.UpdateOptions) (T, error) {
	name := ""
	if m, ok := any(obj).(metav1.Object); ok {
		name = m.GetName()
	}
	return r.into(ctx, r.on(r.client.Put()).Name(name).VersionedParams(&opts, parameterCodec).Body(obj))
}

func (r *resource[T, L]) Delete(ctx context.Context, name string, opts metav1.DeleteOptions) error {
	return r.on(r.client.Delete()).Name(name).Body(&opts).Do(ctx).Error() // as Get
}

func (r *resource[T, L]) Patch(ctx context.Context, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions, subresources ...string) (T, error) {
	return r.into(ctx, r.on(r.client.Patch(pt)).Name(name).SubResource(subresources...).VersionedParams(&opts, parameterCodec).Body(data))
}

func timeoutOf(opts metav1.ListOptions) time.Duration {
	if opts.TimeoutSeconds == nil {
		return 0
	}
	return time.Duration(*opts.TimeoutSeconds) * time.Second
}
