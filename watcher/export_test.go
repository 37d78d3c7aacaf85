package watcher

import (
	"context"
	"sync/atomic"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
)

// AppListWatch exposes appStream to the tests against the apiserver.
func AppListWatch(cfg *rest.Config, namespace, selector string) (cache.ListerWatcherWithContext, error) {
	c, err := newAppClients(cfg)
	if err != nil {
		return nil, err
	}
	return cache.ToListerWatcherWithContext(appListWatch(c, namespace, selector)), nil
}

// AppInformerListing is appStream's informer as a reflector runs it
// where streaming lists are off (an older apiserver): a LIST, then a
// watch. lists counts the LISTs.
func AppInformerListing(cfg *rest.Config, namespace string) (inf cache.SharedIndexInformer, lists *atomic.Int32, err error) {
	c, err := newAppClients(cfg)
	if err != nil {
		return nil, nil, err
	}
	lw := appListWatch(c, namespace, "").(*cache.ListWatch)
	lists = &atomic.Int32{}
	list := lw.ListWithContextFunc
	lw.ListWithContextFunc = func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
		lists.Add(1)
		return list(ctx, opts)
	}
	return cache.NewSharedIndexInformer(noWatchList{lw}, &unstructured.Unstructured{}, 0, cache.Indexers{}), lists, nil
}

type noWatchList struct{ *cache.ListWatch }

func (noWatchList) IsWatchListSemanticsUnSupported() bool { return true }
