package watcher

import "bytes"

// reduceApp returns the JSON of the Application object b without the
// fields that decoding into appJSON drops anyway: unknown top-level
// fields, metadata other than keptMetadata (managedFields), the
// last-applied-configuration annotation, status other than
// keptAppStatus (resources, history) and operationState's
// syncResult.resources. What it keeps decodes exactly as it would have
// in b, so it only saves encoding/json the reading: it may keep more
// (a key written with an escape is kept), never less. b must be one
// whole JSON value (skipValue's); anything but an object is returned as
// it is.
func reduceApp(b []byte) []byte {
	return reduceObject(b, make([]byte, 0, len(b)/2), func(key []byte, v []byte, out []byte) ([]byte, bool) {
		switch string(key) {
		case "apiVersion", "kind", "spec", "operation":
			return append(out, v...), true
		case "metadata":
			return reduceObject(v, out, keepMetadata), true
		case "status":
			return reduceObject(v, out, keepStatus), true
		}
		return out, false
	})
}

// fieldFunc appends the value v of key to out, changed or not, and says
// whether the field is kept (false: out unchanged, the field dropped).
type fieldFunc func(key, v, out []byte) ([]byte, bool)

// reduceObject appends to out the object v with the fields keep keeps,
// or v as it is when it is not an object.
func reduceObject(v, out []byte, keep fieldFunc) []byte {
	start := len(out)
	out = append(out, '{')
	n := 0
	isObject, err := objectFields(v, 0, func(key []byte, s, e int) {
		mark := len(out)
		if n > 0 {
			out = append(out, ',')
		}
		out = append(out, '"')
		out = append(out, key...)
		out = append(out, '"', ':')
		var kept bool
		if bytes.IndexByte(key, '\\') >= 0 {
			out, kept = append(out, v[s:e]...), true // a name no one here spells
		} else {
			out, kept = keep(key, v[s:e], out)
		}
		if !kept {
			out = out[:mark]
			return
		}
		n++
	})
	if !isObject || err != nil {
		return append(out[:start], v...)
	}
	return append(out, '}')
}

func keepMetadata(key, v, out []byte) ([]byte, bool) {
	switch string(key) {
	case "annotations":
		return reduceObject(v, out, func(key, v, out []byte) ([]byte, bool) {
			if string(key) == lastAppliedAnnotation {
				return out, false
			}
			return append(out, v...), true
		}), true
	case "name", "namespace", "uid", "resourceVersion", "generation", "creationTimestamp", "deletionTimestamp", "labels":
		return append(out, v...), true
	}
	return out, false
}

func keepStatus(key, v, out []byte) ([]byte, bool) {
	switch string(key) {
	case "operationState":
		return reduceObject(v, out, func(key, v, out []byte) ([]byte, bool) {
			if string(key) != "syncResult" {
				return append(out, v...), true
			}
			return reduceObject(v, out, func(key, v, out []byte) ([]byte, bool) {
				if string(key) == "resources" {
					return out, false
				}
				return append(out, v...), true
			}), true
		}), true
	case "sync", "health", "summary", "conditions", "sourceType", "sourceTypes":
		return append(out, v...), true
	}
	return out, false
}
