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

// AppInformerListing is appStream's informer as KubeSource runs it: a
// LIST, then a watch. lists counts the LISTs.
func AppInformerListing(cfg *rest.Config, namespace string) (inf cache.SharedIndexInformer, lists *atomic.Int32, err error) {
	c, err := newAppClients(cfg)
	if err != nil {
		return nil, nil, err
	}
	lw := appListWatch(c, namespace, "").(listThenWatch).ListWatch
	lists = &atomic.Int32{}
	list := lw.ListWithContextFunc
	lw.ListWithContextFunc = func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
		lists.Add(1)
		return list(ctx, opts)
	}
	return cache.NewSharedIndexInformer(listThenWatch{lw}, &storedApp{}, 0, cache.Indexers{}), lists, nil
}

// Unstored is obj as the tests compare it: a stored Application (or a
// page of them) decoded into unstructured form; anything else as it is.
func Unstored(obj any) any {
	switch o := obj.(type) {
	case *storedApp:
		u, _ := decodeStored(o.json, o.ResourceVersion, o.Generation)
		return u
	case *storedAppList:
		l := &unstructured.UnstructuredList{Object: map[string]any{"apiVersion": o.APIVersion, "kind": o.Kind}}
		l.SetResourceVersion(o.ResourceVersion)
		l.SetContinue(o.Continue)
		l.SetRemainingItemCount(o.RemainingItemCount)
		for _, it := range o.Items {
			u, _ := decodeStored(it.(*storedApp).json, it.(*storedApp).ResourceVersion, it.(*storedApp).Generation)
			l.Items = append(l.Items, *u)
		}
		return l
	}
	return obj
}
