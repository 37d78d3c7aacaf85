package localkube

import (
	"context"
	"fmt"
	"log/slog"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/crowsnest-dev/crowsnest/watcher"
	"github.com/crowsnest-dev/crowsnest/writeback/kube"
)

// Files gives an Application as read from its file, by namespace/name
// (watcher.FileSource in local mode).
type Files interface {
	Application(key string) (*unstructured.Unstructured, bool)
}

// Apps is the in-memory copy of the Applications that Kubernetes-mode
// write-backs patch in local mode. It is the image reconciler's writer
// (ApplyFrom) and the dry run's planner (PlanFrom) there.
type Apps struct {
	files  Files
	client *memApps
	writer *kube.Writer
	mu     sync.Mutex
}

// New returns an empty copy; each Application is copied from files when
// it is first written or planned.
func New(files Files, log *slog.Logger) *Apps {
	client := newMemApps()
	return &Apps{files: files, client: client, writer: &kube.Writer{Client: client, Log: log}}
}

// ApplyFrom writes overrides to the in-memory copy of the Application,
// as kube.Writer does to a cluster's (controller.ImageWriter). The file's
// copy is not the in-memory one (no resourceVersion), so cached is not
// used and the in-memory one is read first.
func (l *Apps) ApplyFrom(ctx context.Context, namespace, name string, _ *unstructured.Unstructured, overrides []kube.Override) (kube.Result, error) {
	if err := l.ensure(ctx, namespace, name); err != nil {
		return kube.Result{}, err
	}
	return l.writer.Apply(ctx, namespace, name, overrides)
}

// PlanFrom returns the patch ApplyFrom would send to the in-memory copy
// of the Application, made from its file as for a write
// (dryrun.PatchPlanner).
func (l *Apps) PlanFrom(ctx context.Context, namespace, name string, _ *unstructured.Unstructured, overrides []kube.Override) (kube.Patch, error) {
	if err := l.ensure(ctx, namespace, name); err != nil {
		return kube.Patch{}, err
	}
	return l.writer.PlanFrom(ctx, namespace, name, nil, overrides)
}

// ensure copies the Application from its file into memory on first use.
func (l *Apps) ensure(ctx context.Context, namespace, name string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	apps := l.client.Resource(watcher.ApplicationsResource).Namespace(namespace)
	_, err := apps.Get(ctx, name, metav1.GetOptions{})
	if !apierrors.IsNotFound(err) {
		return err
	}
	obj, ok := l.files.Application(namespace + "/" + name)
	if !ok {
		return fmt.Errorf("application %s/%s is no longer in the folder", namespace, name)
	}
	obj.SetNamespace(namespace)
	obj.SetResourceVersion("1")
	_, err = apps.Create(ctx, obj, metav1.CreateOptions{})
	return err
}

// Patched returns the in-memory Application after Kubernetes-mode writes,
// or false when none was written.
func (l *Apps) Patched(ctx context.Context, namespace, name string) (*unstructured.Unstructured, bool) {
	u, err := l.client.Resource(watcher.ApplicationsResource).Namespace(namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, false
	}
	return u, true
}
