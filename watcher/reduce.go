package watcher

import (
	"bytes"
	"encoding/json"
	"strconv"
)

// reducedApp is an Application cut down to the fields crowsnest keeps
// (reduceApp), as JSON, with the bookkeeping a storedApp leaves out.
type reducedApp struct {
	json []byte
	// resourceVersion and generation, when they have their usual types
	// and are set (a non-empty string, an integer not zero), are left out
	// of json: they change on every write, and decodeStored puts them
	// back. Of any other type they stay in json, "" and 0 here, as
	// unstructured.Unstructured's getters read them.
	resourceVersion string
	generation      int64
}

// reduceApp returns the Application object b with only the fields
// TrimApplication keeps (apiVersion, kind, keptMetadata without the
// last-applied-configuration annotation, spec, operation, keptAppStatus
// with operationState's syncResult.resources left out), as JSON that
// decodes to what TrimApplication makes of b decoded, null fields aside:
// a metadata that is not an object is kept as it is, a status that is
// not an object, or keeps nothing, is left out. The kept values are b's
// own bytes, not decoded. b must be one whole JSON value (skipValue's);
// anything but an object reduces to {}.
//
// The reduction is made in *scratch, which it may grow and keeps for the
// next call (nil: a buffer of its own; at most maxScratch is kept); the JSON returned is a copy of
// its length, as the informer keeps it.
func reduceApp(b []byte, scratch *[]byte) reducedApp {
	if scratch == nil {
		scratch = new([]byte)
	}
	var r reducedApp
	out, _ := reduceObject(b, (*scratch)[:0], func(key, v, out []byte) ([]byte, bool) {
		switch string(key) {
		case "apiVersion", "kind", "spec", "operation":
			return append(out, v...), true
		case "metadata":
			if !isObjectStart(v) {
				return append(out, v...), true
			}
			out, _ = reduceObject(v, out, r.keepMetadata)
			return out, true
		case "status":
			if !isObjectStart(v) {
				return out, false
			}
			out, n := reduceObject(v, out, keepStatus)
			return out, n > 0
		}
		return out, false
	})
	if !isObjectStart(b) {
		out = append(out[:0], "{}"...)
	}
	r.json = bytes.Clone(out)
	if cap(out) <= maxScratch {
		*scratch = out[:0]
	}
	return r
}

// maxScratch bounds the buffer reduceApp keeps between calls: one very
// large Application is not worth holding its size for ever.
const maxScratch = 256 << 10

// fieldFunc appends the value v of key (unescaped) to out, changed or
// not, and says whether the field is kept (false: out unchanged, the
// field dropped).
type fieldFunc func(key, v, out []byte) ([]byte, bool)

// reduceObject appends to out the object v with the fields keep keeps,
// and says how many it kept; v as it is when it is not an object.
func reduceObject(v, out []byte, keep fieldFunc) ([]byte, int) {
	start := len(out)
	out = append(out, '{')
	n := 0
	isObject, err := objectFields(v, func(key []byte, s, e int) {
		mark := len(out)
		if n > 0 {
			out = append(out, ',')
		}
		out = append(out, '"')
		out = append(out, key...)
		out = append(out, '"', ':')
		var kept bool
		out, kept = keep(unescapedKey(key), v[s:e], out)
		if !kept {
			out = out[:mark]
			return
		}
		n++
	})
	if !isObject || err != nil {
		return append(out[:start], v...), 0
	}
	return append(out, '}'), n
}

// unescapedKey is a key as the decoder reads it: key itself unless it is
// written with an escape (which the apiserver never writes).
func unescapedKey(key []byte) []byte {
	if bytes.IndexByte(key, '\\') < 0 {
		return key
	}
	var s string
	if json.Unmarshal(append(append([]byte{'"'}, key...), '"'), &s) != nil {
		return key // never: the scanner checked the escapes
	}
	return []byte(s)
}

func isObjectStart(v []byte) bool {
	i := skipSpace(v, 0)
	return i < len(v) && v[i] == '{'
}

// keepMetadata keeps keptMetadata, but resourceVersion and generation
// of their usual types go to r instead.
func (r *reducedApp) keepMetadata(key, v, out []byte) ([]byte, bool) {
	switch string(key) {
	case "annotations":
		out, _ = reduceObject(v, out, func(key, v, out []byte) ([]byte, bool) {
			if string(key) == lastAppliedAnnotation {
				return out, false
			}
			return append(out, v...), true
		})
		return out, true
	case "resourceVersion":
		if s, ok := jsonString(v); ok && s != "" {
			r.resourceVersion = s
			return out, false
		}
		return append(out, v...), true
	case "generation":
		// As sigs.k8s.io/json reads numbers: an int64 if it is one.
		if n, err := strconv.ParseInt(string(v), 10, 64); err == nil && n != 0 {
			r.generation = n
			return out, false
		}
		return append(out, v...), true
	case "name", "namespace", "uid", "creationTimestamp", "deletionTimestamp", "labels":
		return append(out, v...), true
	}
	return out, false
}

func keepStatus(key, v, out []byte) ([]byte, bool) {
	switch string(key) {
	case "operationState":
		out, _ = reduceObject(v, out, func(key, v, out []byte) ([]byte, bool) {
			if string(key) != "syncResult" {
				return append(out, v...), true
			}
			out, _ = reduceObject(v, out, func(key, v, out []byte) ([]byte, bool) {
				if string(key) == "resources" {
					return out, false
				}
				return append(out, v...), true
			})
			return out, true
		})
		return out, true
	case "sync", "health", "summary", "conditions", "sourceType", "sourceTypes":
		return append(out, v...), true
	}
	return out, false
}

// jsonString returns the string the JSON value v (valid) holds; false
// when v is not a string.
func jsonString(v []byte) (string, bool) {
	if len(v) < 2 || v[0] != '"' {
		return "", false
	}
	if bytes.IndexByte(v, '\\') < 0 {
		return string(v[1 : len(v)-1]), true
	}
	var s string
	if json.Unmarshal(v, &s) != nil {
		return "", false
	}
	return s, true
}

// numbersFit reports whether every number of the JSON value b (valid)
// fits a float64, as decoding it needs: sigs.k8s.io/json, as client-go
// uses it, fails the whole object on a number such as 1e400. A number
// without an exponent and of at most 300 characters always fits; only
// the others are parsed.
func numbersFit(b []byte) bool {
	for i := 0; i < len(b); {
		switch c := b[i]; {
		case c == '"':
			for i++; i < len(b) && b[i] != '"'; i++ {
				if b[i] == '\\' {
					i++
				}
			}
			i++
		case c == '-' || (c >= '0' && c <= '9'):
			start, exp := i, false
			for ; i < len(b) && isNumberByte(b[i]); i++ {
				exp = exp || b[i] == 'e' || b[i] == 'E'
			}
			if exp || i-start > 300 {
				if _, err := strconv.ParseFloat(string(b[start:i]), 64); err != nil {
					return false
				}
			}
		default:
			i++
		}
	}
	return true
}

func isNumberByte(c byte) bool {
	return (c >= '0' && c <= '9') || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E'
}
