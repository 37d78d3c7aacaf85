package watcher

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/crowsnest-dev/crowsnest/internal/kuberest"
)

// The Argo CD resources crowsnest watches.
var (
	ApplicationsResource = schema.GroupVersionResource{Group: "argoproj.io", Version: "v1alpha1", Resource: "applications"}
	AppProjectsResource  = schema.GroupVersionResource{Group: "argoproj.io", Version: "v1alpha1", Resource: "appprojects"}
)

// KubeSource watches Applications (and AppProjects) on a kube-apiserver with
// dynamic shared informers, one informer factory per watched namespace.
type KubeSource struct {
	Client dynamic.Interface
	// Config, when set, lists and watches Applications through
	// appStream, which decodes each straight into its trimmed form;
	// without it they come through Client's dynamic informer and are
	// trimmed after decoding (TrimApplication). AppProjects always do.
	Config *rest.Config
	// Namespaces to watch Applications in; empty means all namespaces.
	Namespaces []string
	// Selector is a label selector applied to Applications; empty selects all.
	Selector string
	// ResyncPeriod replays unchanged objects as Resync events; 0 disables it.
	ResyncPeriod time.Duration
	// Projects enables the AppProject informer.
	Projects bool
	// ProjectNamespaces to watch AppProjects in; empty means the same as
	// Namespaces. Argo CD keeps projects in its own namespace even when
	// Applications live in others.
	ProjectNamespaces []string
	Log               *slog.Logger
	Metrics           *Metrics

	synced SyncSignal
}

// Start runs the informers and delivers events to h until ctx is cancelled.
// It returns an error only when the informers cannot be set up.
func (s *KubeSource) Start(ctx context.Context, h Handler) error {
	if s.Client == nil {
		return errors.New("kube source: no client")
	}
	log := s.Log
	if log == nil {
		log = slog.Default()
	}
	d := &dispatcher{handler: h, log: log, metrics: s.Metrics}

	var informers []cache.SharedIndexInformer
	var synced []cache.DoneChecker
	add := func(namespaces []string, resource string, newInformer informerFactory, handler cache.ResourceEventHandler) error {
		if len(namespaces) == 0 {
			namespaces = []string{metav1.NamespaceAll}
		}
		for _, ns := range namespaces {
			inf, err := newInformer(ns)
			if err != nil {
				return err
			}
			reg, err := inf.AddEventHandler(handler)
			if err != nil {
				return fmt.Errorf("adding %s handler: %w", resource, err)
			}
			informers = append(informers, inf)
			// Synced once the handler was given every object of the
			// initial list, not only once the informer's store holds
			// them: the engine counts and reconciles what it was given.
			synced = append(synced, reg.HasSyncedChecker())
		}
		return nil
	}
	apps, err := s.appInformers()
	if err != nil {
		return err
	}
	if err := add(s.Namespaces, ApplicationsResource.Resource, apps, d.storedHandler()); err != nil {
		return err
	}
	if s.Projects {
		projectNamespaces := s.ProjectNamespaces
		if len(projectNamespaces) == 0 {
			projectNamespaces = s.Namespaces
		}
		if err := add(projectNamespaces, AppProjectsResource.Resource, s.dynamicInformers(AppProjectsResource, "", TrimProject),
			d.projectHandler()); err != nil {
			return err
		}
	}

	var running sync.WaitGroup
	defer running.Wait()
	for _, inf := range informers {
		running.Go(func() { inf.RunWithContext(ctx) })
	}
	// Each handler's channel, not client-go's WaitForCacheSync: that
	// polls every 100 ms, and the first pass would wait for its tick.
	for _, c := range synced {
		select {
		case <-c.Done():
		case <-ctx.Done():
			return nil
		}
	}
	s.synced.Mark()
	log.Info("application caches synced", "informers", len(synced))
	<-ctx.Done()
	return nil
}

// informerFactory makes the informer of one namespace.
type informerFactory func(namespace string) (cache.SharedIndexInformer, error)

// appInformers returns the factory of Application informers, which keep
// each Application as JSON (StoreApplication): appStream's with a Config,
// which stores each Application as it reads it, else the dynamic
// client's, trimmed and stored after decoding.
func (s *KubeSource) appInformers() (informerFactory, error) {
	if s.Config == nil {
		return s.dynamicInformers(ApplicationsResource, s.Selector, func(obj any) (any, error) {
			obj, err := TrimApplication(obj)
			if err != nil {
				return nil, err
			}
			return StoreApplication(obj)
		}), nil
	}
	clients, err := newAppClients(s.Config)
	if err != nil {
		return nil, err
	}
	return func(ns string) (cache.SharedIndexInformer, error) {
		return cache.NewSharedIndexInformerWithOptions(appListWatch(clients, ns, s.Selector), &storedApp{},
			cache.SharedIndexInformerOptions{ResyncPeriod: s.ResyncPeriod, ObjectDescription: ApplicationsResource.String()}), nil
	}, nil
}

// dynamicInformers returns the factory of client-go's dynamic informers
// of gvr, transformed after decoding.
func (s *KubeSource) dynamicInformers(gvr schema.GroupVersionResource, selector string, transform cache.TransformFunc) informerFactory {
	return func(ns string) (cache.SharedIndexInformer, error) {
		inf := kuberest.DynamicInformer(s.Client, gvr, ns, s.ResyncPeriod,
			func(o *metav1.ListOptions) { o.LabelSelector = selector })
		if err := inf.SetTransform(transform); err != nil {
			return nil, fmt.Errorf("setting %s transform: %w", gvr.Resource, err)
		}
		return inf, nil
	}
}

// Synced reports whether the initial list of every informer was delivered.
func (s *KubeSource) Synced() bool { return s.synced.IsDone() }

// SyncedDone is closed once the initial list of every informer was
// delivered.
func (s *KubeSource) SyncedDone() <-chan struct{} { return s.synced.Done() }
