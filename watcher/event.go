package watcher

import (
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

	// newRaw and oldRaw are New's and Old's Object as the informer
	// stores them (JSON), for Keep and KeepOld.
	newRaw, oldRaw []byte
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
	d.appStored(typ, oldObj, newObj, nil, nil)
}

// appStored is app with the objects' stored JSON (nil when they have
// none), which AppEvent.Keep and KeepOld keep instead of the trees.
func (d *dispatcher) appStored(typ EventType, oldObj, newObj *unstructured.Unstructured, oldRaw, newRaw []byte) {
	if typ == Updated {
		if oldObj.GetResourceVersion() != "" && oldObj.GetResourceVersion() == newObj.GetResourceVersion() {
			typ = Resync
		} else if !Changed(oldObj, newObj) {
			d.metrics.filtered(kindApplication)
			return
		}
	}
	ev := AppEvent{newRaw: newRaw, oldRaw: oldRaw}
	ev.Type, ev.Initial = typ, typ == addedInitially
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

// informerHandler adapts the dispatcher to client-go's event handler for one
// resource kind: object reads what the informer holds (nil raw when it is
// not stored JSON), emit gets the objects and their stored JSON.
func (d *dispatcher) informerHandler(object func(any) (*unstructured.Unstructured, []byte, bool),
	emit func(typ EventType, oldObj, newObj *unstructured.Unstructured, oldRaw, newRaw []byte)) cache.ResourceEventHandler {
	return cache.ResourceEventHandlerDetailedFuncs{
		AddFunc: func(obj any, initial bool) {
			if u, raw, ok := object(obj); ok {
				typ := Added
				if initial {
					typ = addedInitially
				}
				emit(typ, nil, u, nil, raw)
			}
		},
		UpdateFunc: func(oldObj, newObj any) {
			n, newRaw, ok2 := object(newObj)
			o, oldRaw, ok1 := n, newRaw, ok2
			if oldObj != newObj { // else a resync of the same object, decoded once
				o, oldRaw, ok1 = object(oldObj)
			}
			if ok1 && ok2 {
				emit(Updated, o, n, oldRaw, newRaw)
			}
		},
		DeleteFunc: func(obj any) {
			if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = tomb.Obj
			}
			if u, raw, ok := object(obj); ok {
				emit(Deleted, u, nil, raw, nil)
			}
		},
	}
}

// unstructuredObject is informerHandler's object for informers that keep
// unstructured objects (AppProjects).
func unstructuredObject(obj any) (*unstructured.Unstructured, []byte, bool) {
	u, ok := obj.(*unstructured.Unstructured)
	return u, nil, ok
}
