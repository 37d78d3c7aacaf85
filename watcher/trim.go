package watcher

import (
	"sync"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// lastAppliedAnnotation is written by `kubectl apply` and holds a copy of the
// whole object; crowsnest never reads it and it can be the largest field.
const lastAppliedAnnotation = "kubectl.kubernetes.io/last-applied-configuration"

// keptMetadata lists the metadata fields crowsnest reads. Everything else
// (managedFields first of all) is dropped before the object is cached.
var keptMetadata = []string{
	"name", "namespace", "uid", "resourceVersion", "generation",
	"creationTimestamp", "deletionTimestamp", "labels", "annotations",
}

// keptAppStatus lists the status fields of an Application that crowsnest or
// its notification triggers and templates read. status.resources,
// status.history and status.reconciledAt, the bulk of Argo CD's churn, are
// not among them.
var keptAppStatus = []string{
	"sync", "health", "operationState", "summary", "conditions", "sourceType", "sourceTypes",
}

// TrimApplication reduces an Application to the fields crowsnest reads. It is
// idempotent, as an informer transform must be, and leaves values it does not
// recognise untouched.
func TrimApplication(obj any) (any, error) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return obj, nil
	}
	out := trimObject(u, "spec", "operation")
	if status, ok := u.Object["status"].(map[string]any); ok {
		kept := map[string]any{}
		copyKeys(kept, status, keptAppStatus...)
		if op, ok := kept["operationState"].(map[string]any); ok {
			kept["operationState"] = trimOperationState(op)
		}
		if len(kept) > 0 {
			out["status"] = kept
		}
	}
	u.Object = compactMap(out)
	return u, nil
}

// maxInterned is the longest string value compact interns; longer ones
// (a notification's message, a last sync's error) are rarely shared.
// maxInternedStrings bounds the strings kept: past it the table starts
// afresh (objects already cached keep what they hold).
const (
	maxInterned        = 256
	maxInternedStrings = 1 << 16
)

// interned holds one copy of each string the cached objects repeat. Go's
// unique package would drop a string at the first garbage collection
// after no handle refers to it, so objects decoded later would hold
// copies again.
var interned = struct {
	sync.Mutex
	m map[string]string
}{m: map[string]string{}}

func intern(s string) string {
	interned.Lock()
	defer interned.Unlock()
	if v, ok := interned.m[s]; ok {
		return v
	}
	if len(interned.m) >= maxInternedStrings {
		interned.m = make(map[string]string, maxInternedStrings/4)
	}
	interned.m[s] = s
	return s
}

// compactMap returns a copy of m for the cache: maps sized to what they
// hold (the decoder's grow as they fill), and keys and short strings
// interned, so the thousands of Applications in a cache share one
// "metadata", "targetRevision", "Synced" or image name instead of each
// holding its own. It matters where trees are kept: local mode's
// Applications (FileSource). The informer keeps JSON instead (storedApp).
// Numbers and booleans are kept as they are, and resourceVersion, new at
// every write, is not interned.
func compactMap(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		if s, ok := v.(string); ok && k == "resourceVersion" {
			out[intern(k)] = s
			continue
		}
		out[intern(k)] = compactValue(v)
	}
	return out
}

func compactValue(v any) any {
	switch t := v.(type) {
	case map[string]any:
		return compactMap(t)
	case []any:
		out := make([]any, len(t))
		for i := range t {
			out[i] = compactValue(t[i])
		}
		return out
	case string:
		if len(t) <= maxInterned {
			return intern(t)
		}
	}
	return v
}

// TrimProject reduces an AppProject to its metadata and spec (sync windows,
// roles, destinations); its status is never read.
func TrimProject(obj any) (any, error) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return obj, nil
	}
	u.Object = trimObject(u, "spec")
	return u, nil
}

// trimObject is u's apiVersion, kind, trimmed metadata and the top-level
// fields named by keys.
func trimObject(u *unstructured.Unstructured, keys ...string) map[string]any {
	out := map[string]any{
		"apiVersion": u.Object["apiVersion"],
		"kind":       u.Object["kind"],
		"metadata":   trimMetadata(u.Object["metadata"]),
	}
	copyKeys(out, u.Object, keys...)
	return out
}

func trimMetadata(v any) any {
	md, ok := v.(map[string]any)
	if !ok {
		return v
	}
	out := map[string]any{}
	copyKeys(out, md, keptMetadata...)
	if ann, ok := out["annotations"].(map[string]any); ok {
		if _, has := ann[lastAppliedAnnotation]; has {
			trimmed := make(map[string]any, len(ann)-1)
			for k, v := range ann {
				if k != lastAppliedAnnotation {
					trimmed[k] = v
				}
			}
			out["annotations"] = trimmed
		}
	}
	return out
}

// trimOperationState drops the per-resource results of the last sync, which
// grow with the size of the application and are read by no trigger.
func trimOperationState(op map[string]any) map[string]any {
	sr, ok := op["syncResult"].(map[string]any)
	if !ok {
		return op
	}
	if _, has := sr["resources"]; !has {
		return op
	}
	out := make(map[string]any, len(op))
	for k, v := range op {
		out[k] = v
	}
	keptResult := make(map[string]any, len(sr))
	for k, v := range sr {
		if k != "resources" {
			keptResult[k] = v
		}
	}
	out["syncResult"] = keptResult
	return out
}

func copyKeys(dst, src map[string]any, keys ...string) {
	for _, k := range keys {
		if v, ok := src[k]; ok {
			dst[k] = v
		}
	}
}

// Changed reports whether two versions of a trimmed object differ in any
// field crowsnest keeps, ignoring bookkeeping that changes on every write
// (resourceVersion, generation). It is the predicate that keeps Argo CD's
// status churn out of the work queue.
func Changed(old, cur *unstructured.Unstructured) bool {
	if old == nil || cur == nil {
		return old != cur
	}
	for k, v := range cur.Object {
		if k == "metadata" {
			continue
		}
		if !equality.Semantic.DeepEqual(old.Object[k], v) {
			return true
		}
	}
	for k := range old.Object {
		if _, ok := cur.Object[k]; !ok {
			return true
		}
	}
	om, _ := old.Object["metadata"].(map[string]any)
	cm, _ := cur.Object["metadata"].(map[string]any)
	for _, k := range []string{"name", "namespace", "uid", "labels", "annotations", "deletionTimestamp"} {
		if !equality.Semantic.DeepEqual(om[k], cm[k]) {
			return true
		}
	}
	return false
}
