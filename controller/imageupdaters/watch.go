package imageupdaters

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/cache"

	"github.com/crowsnest-dev/crowsnest/config/imageupdater"
	"github.com/crowsnest-dev/crowsnest/internal/kuberest"
	"github.com/crowsnest-dev/crowsnest/watcher"
)

var gvr = schema.GroupVersionResource{Group: imageupdater.Group, Version: imageupdater.Version, Resource: imageupdater.Plural}

// Modes of the --imageupdater-resources flag.
const (
	// ModeAuto watches ImageUpdaters once the apiserver serves them
	// (discovery, checked again every Recheck until it does): a cluster
	// without argocd-image-updater's CRD works as before.
	ModeAuto = "auto"
	// ModeOn requires the CRD: starting fails without it.
	ModeOn = "on"
	// ModeOff never reads ImageUpdaters.
	ModeOff = "off"
)

// DefaultRecheck is how often ModeAuto asks discovery again while the CRD
// is missing: installing argocd-image-updater's CRD later is picked up
// within a minute at the cost of one small request a minute.
const DefaultRecheck = time.Minute

// ErrNoCRD says the apiserver does not serve ImageUpdaters.
var ErrNoCRD = errors.New("the apiserver does not serve " + imageupdater.Plural + "." + imageupdater.Group + "/" + imageupdater.Version)

// Watcher lists and watches ImageUpdaters into Set and requeues the
// Applications of a namespace whose ImageUpdaters changed.
type Watcher struct {
	Client    dynamic.Interface
	Discovery Discovery
	// Namespaces to watch; none is all. Use the Applications' own: an
	// ImageUpdater selects Applications of its namespace only.
	Namespaces []string
	Mode       string
	Recheck    time.Duration
	Set        *Set
	// Queue reconciles the Applications of a namespace whose
	// ImageUpdaters changed.
	Queue Queue
	Log   *slog.Logger

	mu     sync.Mutex
	stores []cache.Store
	// synced is set once the Applications may be reconciled: the first
	// list is in Set, or ImageUpdaters are not (yet) served.
	synced watcher.SyncSignal
}

// Queue is the engine's work queue as the watcher sees it
// (controller.Engine).
type Queue interface {
	// RequeueNamespace asks for a reconcile of every Application of
	// namespace.
	RequeueNamespace(namespace string)
}

// Discovery is the one discovery question a Watcher asks: client-go's
// discovery client and kubecore.Clientset both answer it.
type Discovery interface {
	ServerResourcesForGroupVersion(groupVersion string) (*metav1.APIResourceList, error)
}

var _ interface {
	Start(ctx context.Context, h watcher.Handler) error
	Synced() bool
	SyncedDone() <-chan struct{}
} = (*Watcher)(nil)

// Served reports whether the apiserver serves ImageUpdaters.
func (w *Watcher) Served() (bool, error) {
	list, err := w.Discovery.ServerResourcesForGroupVersion(gvr.GroupVersion().String())
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("discovering %s: %w", gvr.GroupVersion(), err)
	}
	for i := range list.APIResources {
		if list.APIResources[i].Name == gvr.Resource {
			return true, nil
		}
	}
	return false, nil
}

// readable lists one ImageUpdater: the informers would retry a Forbidden
// list forever, and the engine wait for them.
func (w *Watcher) readable(ctx context.Context) error {
	ns := ""
	if len(w.Namespaces) > 0 {
		ns = w.Namespaces[0]
	}
	_, err := w.Client.Resource(gvr).Namespace(ns).List(ctx, metav1.ListOptions{Limit: 1})
	if err != nil {
		return fmt.Errorf("listing %s: %w", gvr.GroupResource(), err)
	}
	return nil
}

// Synced reports whether the Applications may be reconciled: the first
// list of ImageUpdaters is in force, or the apiserver does not serve them.
// The engine waits for it (it is one of its Sources), so no Application
// is updated by its annotations before an ImageUpdater that selects it
// is known.
func (w *Watcher) Synced() bool { return w.Mode == ModeOff || w.synced.IsDone() }

// SyncedDone is closed once Synced is true.
func (w *Watcher) SyncedDone() <-chan struct{} {
	if w.Mode == ModeOff {
		w.synced.Mark()
	}
	return w.synced.Done()
}

// Start watches until ctx ends. In ModeAuto it waits for the CRD. It
// emits no Application events (h is unused): the engine's queue gets the
// Applications of a namespace whose ImageUpdaters changed via Queue.
func (w *Watcher) Start(ctx context.Context, _ watcher.Handler) error {
	if w.Mode == ModeOff {
		return nil
	}
	recheck := cmpDur(w.Recheck, DefaultRecheck)
	said := false
	for {
		ok, err := w.Served()
		if ok {
			err = w.readable(ctx)
			ok = err == nil
			if !ok && w.Mode == ModeOn {
				return fmt.Errorf("--imageupdater-resources=on: %w", err)
			}
		}
		switch {
		case ok:
		case w.Mode == ModeOn && err == nil:
			return fmt.Errorf("--imageupdater-resources=on: %w", ErrNoCRD)
		case err != nil:
			// Forbidden too: an install whose RBAC predates ImageUpdaters
			// keeps working without them, and says why.
			w.Log.Warn("cannot read ImageUpdaters; asking again later", "error", err)
			w.synced.Mark()
		case !said:
			w.Log.Info("ImageUpdater resources are not served (argocd-image-updater 1.x's CRD is not installed); not watching them until they are")
			said = true
		}
		if !ok && err == nil {
			w.synced.Mark()
		}
		if ok {
			break
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(recheck): // the next discovery poll
		}
	}
	namespaces := w.Namespaces
	if len(namespaces) == 0 {
		namespaces = []string{""}
	}
	var synced []cache.DoneChecker
	for _, ns := range namespaces {
		inf := kuberest.DynamicInformer(w.Client, gvr, ns, 0, nil)
		reg, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc:    func(obj any) { w.apply(obj) },
			UpdateFunc: func(_, obj any) { w.apply(obj) },
			DeleteFunc: w.delete,
		})
		if err != nil {
			return err
		}
		w.mu.Lock()
		w.stores = append(w.stores, inf.GetStore())
		w.mu.Unlock()
		go inf.Run(ctx.Done())
		// The handler's, not the informer's: synced once every
		// ImageUpdater of the first list is applied to Set, not only
		// stored, so no Application is reconciled before them.
		synced = append(synced, reg.HasSyncedChecker())
	}
	for _, c := range synced {
		select {
		case <-c.Done():
		case <-ctx.Done():
			return nil
		}
	}
	w.Log.Info("watching ImageUpdater resources", "namespaces", len(w.Namespaces))
	w.synced.Mark()
	<-ctx.Done()
	return nil
}

var _ Store = (*Watcher)(nil)

// Get returns the watched copy of namespace/name, nil when unknown.
func (w *Watcher) Get(key string) *unstructured.Unstructured {
	w.mu.Lock()
	stores := w.stores
	w.mu.Unlock()
	for _, s := range stores {
		if obj, ok, _ := s.GetByKey(key); ok {
			if u, ok := obj.(*unstructured.Unstructured); ok {
				return u
			}
		}
	}
	return nil
}

func (w *Watcher) apply(obj any) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return
	}
	iu, parseErr := Decode(u)
	if iu == nil {
		w.Set.Delete(u.GetNamespace() + "/" + u.GetName())
		w.Log.Warn("ImageUpdater unreadable; not in force", "imageupdater", u.GetNamespace()+"/"+u.GetName(), "error", parseErr)
		w.Set.Metrics.problems(u.GetNamespace()+"/"+u.GetName(), 1)
	} else {
		w.Set.Apply(iu, parseErr)
	}
	w.Queue.RequeueNamespace(u.GetNamespace())
}

func (w *Watcher) delete(obj any) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return
	}
	w.Set.Delete(u.GetNamespace() + "/" + u.GetName())
	w.Queue.RequeueNamespace(u.GetNamespace())
}

// Decode reads an ImageUpdater from the apiserver strictly; when it has
// fields this crowsnest does not know (a newer CRD), it is read again
// leniently and the strict error is returned with it. A nil result means
// unreadable.
func Decode(u *unstructured.Unstructured) (*imageupdater.Resource, error) {
	data, err := json.Marshal(u.Object)
	if err != nil {
		return nil, err
	}
	iu, strictErr := imageupdater.Parse(data)
	if strictErr == nil {
		return iu, nil
	}
	var loose imageupdater.Resource
	if err := json.Unmarshal(data, &loose); err != nil {
		return nil, strictErr
	}
	return &loose, strictErr
}
