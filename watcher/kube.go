package watcher

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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

	synced atomic.Bool
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

	var factories []dynamicinformer.DynamicSharedInformerFactory
	var synced []cache.InformerSynced
	add := func(namespaces []string, gvr schema.GroupVersionResource, selector string,
		transform cache.TransformFunc, emit func(EventType, *unstructured.Unstructured, *unstructured.Unstructured)) error {
		if len(namespaces) == 0 {
			namespaces = []string{metav1.NamespaceAll}
		}
		for _, ns := range namespaces {
			f := dynamicinformer.NewFilteredDynamicSharedInformerFactory(s.Client, s.ResyncPeriod, ns,
				func(o *metav1.ListOptions) { o.LabelSelector = selector })
			inf := f.ForResource(gvr).Informer()
			if err := inf.SetTransform(transform); err != nil {
				return fmt.Errorf("setting %s transform: %w", gvr.Resource, err)
			}
			reg, err := inf.AddEventHandler(d.informerHandler(emit))
			if err != nil {
				return fmt.Errorf("adding %s handler: %w", gvr.Resource, err)
			}
			factories = append(factories, f)
			// Synced once the handler was given every object of the
			// initial list, not only once the informer's store holds
			// them: the engine counts and reconciles what it was given.
			synced = append(synced, reg.HasSynced)
		}
		return nil
	}
	var streamed []cache.SharedIndexInformer
	if s.Config != nil {
		namespaces := s.Namespaces
		if len(namespaces) == 0 {
			namespaces = []string{metav1.NamespaceAll}
		}
		clients, err := newAppClients(s.Config)
		if err != nil {
			return err
		}
		for _, ns := range namespaces {
			inf := cache.NewSharedIndexInformerWithOptions(appListWatch(clients, ns, s.Selector), &unstructured.Unstructured{},
				cache.SharedIndexInformerOptions{ResyncPeriod: s.ResyncPeriod, ObjectDescription: ApplicationsResource.String()})
			reg, err := inf.AddEventHandler(d.informerHandler(d.app))
			if err != nil {
				return fmt.Errorf("adding applications handler: %w", err)
			}
			streamed = append(streamed, inf)
			synced = append(synced, reg.HasSynced)
		}
	} else if err := add(s.Namespaces, ApplicationsResource, s.Selector, TrimApplication, d.app); err != nil {
		return err
	}
	if s.Projects {
		projectNamespaces := s.ProjectNamespaces
		if len(projectNamespaces) == 0 {
			projectNamespaces = s.Namespaces
		}
		if err := add(projectNamespaces, AppProjectsResource, "", TrimProject, d.project); err != nil {
			return err
		}
	}

	var running sync.WaitGroup
	for _, inf := range streamed {
		running.Go(func() { inf.RunWithContext(ctx) })
	}
	for _, f := range factories {
		f.Start(ctx.Done())
	}
	defer func() {
		for _, f := range factories {
			f.Shutdown()
		}
		running.Wait()
	}()
	if cache.WaitForCacheSync(ctx.Done(), synced...) {
		s.synced.Store(true)
		log.Info("application caches synced", "informers", len(synced))
	}
	<-ctx.Done()
	return nil
}

// Synced reports whether the initial list of every informer was delivered.
func (s *KubeSource) Synced() bool { return s.synced.Load() }
