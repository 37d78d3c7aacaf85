package watcher

import (
	"bytes"
	"log/slog"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/cache"
)

// EventType says what happened to an object.
type EventType string

// Event types. Resync is an informer's periodic replay of an unchanged
// object; handlers may use it as a safety net to re-check the object.
const (
	Added   EventType = "added"
	Updated EventType = "updated"
	Deleted EventType = "deleted"
	Resync  EventType = "resync"
	// addedInitially is Added from the informer's initial list, between
	// the informer handler and the dispatcher (AppEvent.Initial).
	addedInitially EventType = "added-initially"
)

// AppEvent is one observed change of an Application. Old is nil for Added;
// New is nil for Deleted (Old then holds the last known state).
type AppEvent struct {
	Type EventType
	Old  *App
	New  *App
	// Initial marks an Added event of the informer's initial list: an
	// Application that existed before crowsnest watched. The list may
	// reach the handlers after the informer reports synced.
	Initial bool
}

// Key returns the key of the Application the event is about.
func (e AppEvent) Key() string {
	if e.New != nil {
		return e.New.Key()
	}
	return e.Old.Key()
}

// ProjectEvent is one observed change of an AppProject.
type ProjectEvent struct {
	Type EventType
	Old  *Project
	New  *Project
}

// Handler receives events from a source. Calls for one object arrive in the
// order the source observed them and are not concurrent for one source, so
// a handler sees every transition; it must return quickly.
type Handler interface {
	OnAppEvent(AppEvent)
	OnProjectEvent(ProjectEvent)
}

// Resource kinds, as metric label values.
const (
	kindApplication = "Application"
	kindAppProject  = "AppProject"
)

// dispatcher turns raw object changes into events: it builds views, applies
// the Changed predicate and counts what it forwards and filters. Both sources
// use it, which is what makes their events the same.
type dispatcher struct {
	handler Handler
	log     *slog.Logger
	metrics *Metrics
}

func (d *dispatcher) app(typ EventType, oldObj, newObj *unstructured.Unstructured) {
	if typ == Updated {
		if oldObj.GetResourceVersion() != "" && oldObj.GetResourceVersion() == newObj.GetResourceVersion() {
			typ = Resync
		} else if !Changed(oldObj, newObj) {
			d.metrics.filtered(kindApplication)
			return
		}
	}
	ev := AppEvent{Type: typ, Initial: typ == addedInitially}
	if ev.Initial {
		ev.Type = Added
	}
	var err error
	if oldObj != nil {
		if ev.Old, err = AppFromObject(oldObj); err != nil && newObj == nil {
			d.invalid(oldObj, err)
			return
		}
	}
	if newObj != nil {
		if ev.New, err = AppFromObject(newObj); err != nil {
			d.invalid(newObj, err)
			return
		}
	}
	if ev.Old == nil && typ == Updated {
		// The previous version was unreadable; to the engine the app appears now.
		ev.Type = Added
	}
	d.metrics.event(kindApplication, ev.Type)
	d.handler.OnAppEvent(ev)
}

// stored is app for the apps informer's stored Applications: their views
// were read when stored, and two versions differ in what crowsnest keeps
// when their JSON does (storedApp), so nothing is decoded here.
func (d *dispatcher) stored(typ EventType, old, cur *storedApp) {
	if typ == Updated {
		if old.ResourceVersion != "" && old.ResourceVersion == cur.ResourceVersion {
			typ = Resync
		} else if bytes.Equal(old.json, cur.json) {
			d.metrics.filtered(kindApplication)
			return
		}
	}
	ev := AppEvent{Type: typ, Initial: typ == addedInitially}
	if ev.Initial {
		ev.Type = Added
	}
	if old != nil {
		if ev.Old = old.lazy(); ev.Old == nil && cur == nil {
			d.invalidStored(old)
			return
		}
	}
	if cur != nil {
		if ev.New = cur.lazy(); ev.New == nil {
			d.invalidStored(cur)
			return
		}
	}
	if ev.Old == nil && typ == Updated {
		// The previous version was unreadable; to the engine the app appears now.
		ev.Type = Added
	}
	d.metrics.event(kindApplication, ev.Type)
	d.handler.OnAppEvent(ev)
}

func (d *dispatcher) invalidStored(s *storedApp) {
	d.metrics.invalid(kindApplication)
	d.log.Error("skipping unreadable application", "app", s.Namespace+"/"+s.Name, "error", s.err)
}

// storedHandler adapts the dispatcher to client-go's event handler for
// the apps informer, whose objects are storedApps.
func (d *dispatcher) storedHandler() cache.ResourceEventHandler {
	return cache.ResourceEventHandlerDetailedFuncs{
		AddFunc: func(obj any, initial bool) {
			if s, ok := storedOf(obj); ok {
				typ := Added
				if initial {
					typ = addedInitially
				}
				d.stored(typ, nil, s)
			}
		},
		UpdateFunc: func(oldObj, newObj any) {
			o, ok1 := storedOf(oldObj)
			n, ok2 := storedOf(newObj)
			if ok1 && ok2 {
				d.stored(Updated, o, n)
			}
		},
		DeleteFunc: func(obj any) {
			if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = tomb.Obj
			}
			if s, ok := storedOf(obj); ok {
				d.stored(Deleted, s, nil)
			}
		},
	}
}

func (d *dispatcher) project(typ EventType, oldObj, newObj *unstructured.Unstructured) {
	if typ == addedInitially {
		typ = Added
	}
	if typ == Updated {
		if oldObj.GetResourceVersion() != "" && oldObj.GetResourceVersion() == newObj.GetResourceVersion() {
			typ = Resync
		} else if !Changed(oldObj, newObj) {
			d.metrics.filtered(kindAppProject)
			return
		}
	}
	ev := ProjectEvent{Type: typ}
	if oldObj != nil {
		ev.Old = ProjectFromObject(oldObj)
	}
	if newObj != nil {
		ev.New = ProjectFromObject(newObj)
	}
	d.metrics.event(kindAppProject, ev.Type)
	d.handler.OnProjectEvent(ev)
}

// invalid reports an Application whose fields have the wrong shape; it is
// skipped until a readable version arrives.
func (d *dispatcher) invalid(u *unstructured.Unstructured, err error) {
	d.metrics.invalid(kindApplication)
	d.log.Error("skipping unreadable application", "app", u.GetNamespace()+"/"+u.GetName(), "error", err)
}

// projectHandler adapts the dispatcher to client-go's event handler for
// the AppProjects informer, which keeps unstructured objects.
func (d *dispatcher) projectHandler() cache.ResourceEventHandler {
	return cache.ResourceEventHandlerDetailedFuncs{
		AddFunc: func(obj any, _ bool) {
			if u, ok := obj.(*unstructured.Unstructured); ok {
				d.project(Added, nil, u)
			}
		},
		UpdateFunc: func(oldObj, newObj any) {
			o, ok1 := oldObj.(*unstructured.Unstructured)
			n, ok2 := newObj.(*unstructured.Unstructured)
			if ok1 && ok2 {
				d.project(Updated, o, n)
			}
		},
		DeleteFunc: func(obj any) {
			if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = tomb.Obj
			}
			if u, ok := obj.(*unstructured.Unstructured); ok {
				d.project(Deleted, u, nil)
			}
		},
	}
}
