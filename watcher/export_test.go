package watcher

import (
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
)

// AppListWatch exposes appStream to the tests against the apiserver.
func AppListWatch(cfg *rest.Config, namespace, selector string) (cache.ListerWatcherWithContext, error) {
	c, err := newAppClient(cfg)
	if err != nil {
		return nil, err
	}
	return cache.ToListerWatcherWithContext(appListWatch(c, namespace, selector)), nil
}
