package windowsreport

import (
	"context"
	"fmt"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"

	"github.com/crowsnest-dev/crowsnest/config"
	"github.com/crowsnest-dev/crowsnest/internal/setup"
	"github.com/crowsnest-dev/crowsnest/watcher"
)

// readCluster lists Applications and AppProjects with the same typed views
// the daemon uses.
func (o *Options) readCluster(ctx context.Context) (*setup.AppsDir, error) {
	rc, err := setup.RestConfig(o.Kubeconfig, config.Default(), o.UserAgent)
	if err != nil {
		return nil, err
	}
	dyn, err := dynamic.NewForConfig(rc)
	if err != nil {
		return nil, fmt.Errorf("building kube client: %w", err)
	}
	objs := &setup.AppsDir{}
	list, err := dyn.Resource(watcher.ApplicationsResource).Namespace(o.Namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing Applications: %w", err)
	}
	for i := range list.Items {
		a, err := watcher.AppFromObject(&list.Items[i])
		if err != nil {
			return nil, err
		}
		objs.Apps = append(objs.Apps, a)
	}
	// Argo CD reads AppProjects in its own namespace only; a same-named
	// one elsewhere is nobody's project.
	projects, err := dyn.Resource(watcher.AppProjectsResource).Namespace(o.ArgoCDNamespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing AppProjects: %w", err)
	}
	for i := range projects.Items {
		objs.Projects = append(objs.Projects, watcher.ProjectFromObject(&projects.Items[i]))
	}
	slices.SortFunc(objs.Apps, func(a, b *watcher.App) int { return strings.Compare(a.Key(), b.Key()) })
	return objs, nil
}
