package kuberest

import (
	"context"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/cache"
)

// DynamicInformer is an informer of gvr's objects in namespace ("" for
// all) through client, as unstructured objects; tweak, when set, edits
// each list and watch request's options (a label selector). It is what
// client-go's dynamicinformer builds, without that package: it imports
// the typed informers, and with them the typed clientset and its scheme
// of every built-in API group, which would cost the daemon tens of
// megabytes of memory.
func DynamicInformer(client dynamic.Interface, gvr schema.GroupVersionResource, namespace string, resync time.Duration,
	tweak func(*metav1.ListOptions),
) cache.SharedIndexInformer {
	edit := func(o metav1.ListOptions) metav1.ListOptions {
		if tweak != nil {
			tweak(&o)
		}
		return o
	}
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return client.Resource(gvr).Namespace(namespace).List(ctx, edit(o))
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			return client.Resource(gvr).Namespace(namespace).Watch(ctx, edit(o))
		},
	}
	return cache.NewSharedIndexInformerWithOptions(cache.ToListWatcherWithWatchListSemantics(lw, client), &unstructured.Unstructured{},
		cache.SharedIndexInformerOptions{ResyncPeriod: resync, Indexers: cache.Indexers{}, ObjectDescription: gvr.String()})
}
