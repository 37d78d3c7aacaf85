package watcher

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	kjson "sigs.k8s.io/json"
)

// storedApp is how the informer keeps an Application between events: its
// trimmed form as JSON, and the metadata the informer's key function
// reads. As a tree of maps the same Application takes about six times the
// memory, and with thousands of Applications the cache is most of
// crowsnest's live heap, which the garbage collector doubles (the S2 and
// S3 benchmarks' peak RSS). The view (App) is read once, when stored;
// events carry it with the JSON, which only a reader of the whole
// Object decodes (App.Decoded); the engine and the notifier keep the
// same bytes (watcher.Kept).
//
// From the apiserver (decodeApp) the JSON is the apiserver's own bytes of
// the fields kept; from anywhere else (StoreApplication) json.Marshal's.
// It leaves out resourceVersion and generation, which change on every
// write (they are in ObjectMeta and the view): two versions that differ
// in nothing crowsnest keeps have the same bytes, which is the
// dispatcher's Changed without decoding either (the apiserver writes an
// object's fields in one order; were it not to, a false "changed" costs
// a reconcile that finds nothing to do).
type storedApp struct {
	// name, namespace, uid, resourceVersion and generation only (and
	// a bookmark's annotations)
	metav1.ObjectMeta
	json []byte
	// view is the App read from the Application when stored, its Object
	// nil; err is why it could not be read (view then nil).
	view *App
	err  error
}

var _ runtime.Object = (*storedApp)(nil)

func (s *storedApp) GetObjectKind() schema.ObjectKind { return schema.EmptyObjectKind }

// DeepCopyObject copies the metadata; the JSON is never modified, so the
// copy shares it.
func (s *storedApp) DeepCopyObject() runtime.Object {
	c := &storedApp{json: s.json, view: s.view, err: s.err}
	s.DeepCopyInto(&c.ObjectMeta)
	return c
}

// StoreApplication is the apps informer's transform: a trimmed
// Application (TrimApplication's or the watch decoder's) becomes its
// storedApp. It is idempotent and leaves other values untouched.
func StoreApplication(obj any) (any, error) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return obj, nil
	}
	data, err := marshalApp(withoutVersion(u.Object))
	if err != nil {
		return nil, fmt.Errorf("storing Application %s/%s: %w", u.GetNamespace(), u.GetName(), err)
	}
	s := &storedApp{json: data}
	s.Name, s.Namespace, s.UID, s.ResourceVersion = u.GetName(), u.GetNamespace(), u.GetUID(), u.GetResourceVersion()
	s.Generation = u.GetGeneration()
	if s.view, s.err = AppFromObject(u); s.view != nil {
		s.view.Object = nil
	}
	return s, nil
}

// withoutVersion returns obj without metadata.resourceVersion and
// metadata.generation when they have their usual types and are set (a
// string, an int64 not zero), which GetResourceVersion and GetGeneration
// then read in full and decodeStored puts back; obj itself is not
// changed.
func withoutVersion(obj map[string]any) map[string]any {
	meta, _ := obj["metadata"].(map[string]any)
	rvValue, _ := meta["resourceVersion"].(string)
	genValue, _ := meta["generation"].(int64)
	rv, gen := rvValue != "", genValue != 0
	if !rv && !gen {
		return obj
	}
	meta = maps.Clone(meta)
	if rv {
		delete(meta, "resourceVersion")
	}
	if gen {
		delete(meta, "generation")
	}
	out := maps.Clone(obj)
	out["metadata"] = meta
	return out
}

// lazy returns the stored view as an event carries it: a copy with the
// JSON (App.Decoded). nil when the Application could not be read.
func (s *storedApp) lazy() *App {
	if s.view == nil {
		return nil
	}
	a := *s.view
	a.raw = s.json
	return &a
}

// storedAppList is a page of stored Applications, as the apps informer's
// reflector reads it (meta.ExtractList takes Items of runtime.Object).
type storedAppList struct {
	metav1.TypeMeta
	metav1.ListMeta
	Items []runtime.Object
}

var _ runtime.Object = (*storedAppList)(nil)

func (l *storedAppList) DeepCopyObject() runtime.Object {
	c := &storedAppList{TypeMeta: l.TypeMeta, Items: make([]runtime.Object, len(l.Items))}
	l.DeepCopyInto(&c.ListMeta)
	for i, it := range l.Items {
		c.Items[i] = it.DeepCopyObject()
	}
	return c
}

// marshalApp encodes an Application for decodeApp to read back the same:
// a whole float64 keeps a decimal point ("1.0"), which json.Marshal
// drops, so that it is read as a float again, not as an int64.
func marshalApp(m map[string]any) ([]byte, error) {
	v, _ := floatsKept(m)
	return json.Marshal(v) // callers say what they stored
}

// floatsKept returns v with each whole float64 that decoding would read
// as an int64 made a json.Number with a decimal point: v itself when it
// holds none, else a copy of the maps and slices on the way to them.
func floatsKept(v any) (any, bool) {
	switch t := v.(type) {
	case float64:
		if t == math.Trunc(t) && math.Abs(t) < math.MaxInt64 {
			return json.Number(strconv.FormatFloat(t, 'f', 1, 64)), true
		}
	case map[string]any:
		var out map[string]any
		for k, e := range t {
			if ne, changed := floatsKept(e); changed {
				if out == nil {
					out = maps.Clone(t)
				}
				out[k] = ne
			}
		}
		if out != nil {
			return out, true
		}
	case []any:
		var out []any
		for i, e := range t {
			if ne, changed := floatsKept(e); changed {
				if out == nil {
					out = slices.Clone(t)
				}
				out[i] = ne
			}
		}
		if out != nil {
			return out, true
		}
	}
	return v, false
}

// decodeStored reads an Application the way the decoder and the dynamic
// client do (integers as int64), and puts back the resourceVersion and
// generation a storedApp's JSON leaves out (none when empty or zero).
func decodeStored(data []byte, resourceVersion string, generation int64) (*unstructured.Unstructured, error) {
	var m map[string]any
	if err := kjson.UnmarshalCaseSensitivePreserveInts(data, &m); err != nil {
		return nil, fmt.Errorf("reading a stored Application: %w", err)
	}
	if resourceVersion != "" || generation != 0 {
		meta, _ := m["metadata"].(map[string]any)
		if meta == nil {
			meta = map[string]any{}
			m["metadata"] = meta
		}
		if resourceVersion != "" {
			meta["resourceVersion"] = resourceVersion
		}
		if generation != 0 {
			meta["generation"] = generation
		}
	}
	return &unstructured.Unstructured{Object: m}, nil
}

// storedOf returns the apps informer's object as a storedApp, storing an
// unstructured one (never from the informers crowsnest makes).
func storedOf(obj any) (*storedApp, bool) {
	switch o := obj.(type) {
	case *storedApp:
		return o, true
	case *unstructured.Unstructured:
		s, err := StoreApplication(o)
		if err != nil {
			return nil, false
		}
		return s.(*storedApp), true
	}
	return nil, false
}

// Kept is an App as a long-lived holder (the engine) keeps it: the view
// without its Object, and the Object as JSON, the informer's own bytes
// when the App came from it. It costs about a sixth of the App with its
// tree of maps; App decodes the Object again.
type Kept struct {
	view App // Object nil
	raw  []byte
}

// Keep returns ev.New to keep (nil for a Deleted event).
func (e AppEvent) Keep() *Kept { return keep(e.New, nil) }

// KeepOld returns ev.Old to keep (nil for an Added event).
func (e AppEvent) KeepOld() *Kept { return keep(e.Old, nil) }

// KeepApp returns a to keep, its Object encoded, or the JSON a Lazy App
// came with (nil for nil).
func KeepApp(a *App) *Kept { return keep(a, nil) }

// keep keeps a with raw, its Object as the informer stored it, or else
// encodes the Object. An Object that JSON cannot encode (never from a
// source) is kept as it is.
func keep(a *App, raw []byte) *Kept {
	if a == nil {
		return nil
	}
	if raw == nil && a.Object == nil {
		raw = a.raw // a Lazy App, kept again
	}
	k := &Kept{view: *a, raw: raw}
	k.view.raw = nil
	if k.raw == nil && a.Object != nil {
		data, err := marshalApp(a.Object.Object)
		if err != nil {
			return k
		}
		k.raw = data
	}
	if k.raw != nil {
		k.view.Object = nil
	}
	return k
}

// View is the kept App without its Object (decoding nothing); the
// caller must not change it.
func (k *Kept) View() *App { return &k.view }

// Project is the kept App's project, read without decoding its Object.
func (k *Kept) Project() string { return k.view.Project }

// Lazy returns the kept App with its Object not decoded (Decoded decodes
// it): a copy the caller may keep or change, for the many readers that
// need only the view. A nil Kept gives nil.
func (k *Kept) Lazy() *App {
	if k == nil {
		return nil
	}
	a := k.view
	a.raw = k.raw
	return &a
}

// App returns the kept App with its Object decoded: a copy the caller may
// keep or change. A nil Kept gives nil.
func (k *Kept) App() *App {
	if k == nil {
		return nil
	}
	a := k.view
	if k.raw == nil {
		return &a
	}
	u, err := decodeStored(k.raw, a.ResourceVersion, a.generation)
	if err != nil {
		return &a // never: the JSON is json.Marshal's, or checked when stored (decodeApp)
	}
	a.Object = u
	return &a
}
