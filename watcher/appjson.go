package watcher

import (
	"encoding/json"
	"errors"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	kjson "sigs.k8s.io/json"
)

// errNumberRange is an Application holding a number no float64 holds,
// which client-go's decoding refuses (and the apiserver never stores).
var errNumberRange = errors.New("a number out of range")

// decodeApp stores the Application object b, one whole JSON value off
// the apiserver: reduced to what crowsnest keeps (reduceApp, in
// scratch), kept as those bytes, and its view read from them (viewJSON),
// the same AppFromObject reads from the decoded, trimmed object. A
// bookmark keeps its annotations too: the reflector reads the end of a
// streaming list's initial events there.
func decodeApp(b []byte, bookmark bool, scratch *[]byte) (*storedApp, error) {
	r := reduceApp(b, scratch)
	if !numbersFit(r.json) {
		return nil, errNumberRange
	}
	var v viewJSON
	err := v.read(r.json)
	m := &v.meta
	s := &storedApp{json: r.json}
	s.Name, s.Namespace, s.UID, s.ResourceVersion, s.Generation = m.name, m.namespace, m.uid, r.resourceVersion, r.generation
	if bookmark {
		s.Annotations = m.annotations
	}
	if err != nil {
		s.err = fmt.Errorf("reading Application %s/%s: %w", m.namespace, m.name, err)
		return s, nil
	}
	a := viewOf(&v.spec, &v.status, v.opPending)
	a.Namespace, a.Name, a.UID, a.ResourceVersion, a.generation = m.namespace, m.name, string(m.uid), r.resourceVersion, r.generation
	a.Labels, a.Annotations, a.Deleting = m.labels, m.annotations, m.deleting
	s.view = a
	return s, nil
}

// viewJSON is what the view reads of an Application, read from its JSON
// with jsonscan's scanner: only the fields appShape names are decoded,
// the rest is skipped, as the converter in AppFromObject reads them from
// the decoded object: a field of the wrong type is an error that names
// it ("spec.source is a string, not an object"), null is absent, keys are
// matched case-sensitively; the metadata as viewMeta reads it.
type viewJSON struct {
	meta      viewMeta
	spec      appSpecShape
	status    appStatusShape
	opPending bool
}

// read reads b, an Application (valid JSON); the error is the first
// field of the wrong type.
func (v *viewJSON) read(b []byte) error {
	var err error
	fail := func(e error) {
		if err == nil {
			err = e
		}
	}
	isObj, _ := objectFields(b, func(key []byte, s, e int) {
		val := b[s:e]
		switch string(unescapedKey(key)) {
		case "metadata":
			v.meta.read(val)
		case "spec":
			fail(fields(val, "spec", &v.spec, func(key, val []byte) error {
				switch string(key) {
				case "project":
					return leaf(val, "spec.project", &v.spec.Project)
				case "source":
					return leaf(val, "spec.source", &v.spec.Source)
				case "sources":
					return leaf(val, "spec.sources", &v.spec.Sources)
				case "destination":
					return leaf(val, "spec.destination", &v.spec.Destination)
				}
				return nil
			}))
		case "operation":
			fail(fields(val, "operation", new(map[string]any), func([]byte, []byte) error {
				v.opPending = true
				return nil
			}))
		case "status":
			st := &v.status
			fail(fields(val, "status", st, func(key, val []byte) error {
				switch string(key) {
				case "sync":
					return leaf(val, "status.sync", &st.Sync)
				case "health":
					return leaf(val, "status.health", &st.Health)
				case "operationState":
					return fields(val, "status.operationState", &st.OperationState, func(key, val []byte) error {
						if string(key) == "phase" {
							return leaf(val, "status.operationState.phase", &st.OperationState.Phase)
						}
						return nil
					})
				case "summary":
					return fields(val, "status.summary", &st.Summary, func(key, val []byte) error {
						if string(key) == "images" {
							return leaf(val, "status.summary.images", &st.Summary.Images)
						}
						return nil
					})
				case "sourceType":
					return leaf(val, "status.sourceType", &st.SourceType)
				case "sourceTypes":
					return leaf(val, "status.sourceTypes", &st.SourceTypes)
				}
				return nil
			}))
		}
	})
	if !isObj {
		return nil // never: reduceApp makes an object
	}
	return err
}

// fields calls field for each field of the object val (at path) in
// order, and returns the first error; null is no field; anything else
// is the type error decoding val into typ (an object type) reports.
func fields(val []byte, path string, typ any, field func(key, val []byte) error) error {
	var err error
	isObj, _ := objectFields(val, func(key []byte, s, e int) {
		if ferr := field(unescapedKey(key), val[s:e]); ferr != nil && err == nil {
			err = ferr
		}
	})
	if isObj || string(val) == "null" {
		return err
	}
	return leaf(val, path, typ)
}

// leaf decodes val (at path) into dst as encoding/json does, its error
// naming the field.
func leaf(val []byte, path string, dst any) error {
	err := kjson.UnmarshalCaseSensitivePreserveInts(val, dst)
	if err == nil {
		return nil
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		if te.Field == "" {
			te.Field = path
		} else {
			te.Field = path + "." + te.Field
		}
		if named, ok := namedTypeError(te); ok {
			return named
		}
	}
	return fmt.Errorf("%s: %w", path, err)
}

// viewMeta is the metadata of viewJSON. A field of the wrong type reads
// as its zero value, never as an error: name, namespace, uid and
// deletionTimestamp when not strings, labels and annotations when not
// objects of strings (null values read as ""), as the getters read them.
type viewMeta struct {
	name, namespace     string
	uid                 types.UID
	labels, annotations map[string]string
	deleting            bool
}

// read reads the metadata object b.
func (m *viewMeta) read(b []byte) {
	_, _ = objectFields(b, func(key []byte, s, e int) {
		v := b[s:e]
		switch string(unescapedKey(key)) {
		case "name":
			m.name, _ = jsonString(v)
		case "namespace":
			m.namespace, _ = jsonString(v)
		case "uid":
			uid, _ := jsonString(v)
			m.uid = types.UID(uid)
		case "labels":
			m.labels = jsonStringMap(v)
		case "annotations":
			m.annotations = jsonStringMap(v)
		case "deletionTimestamp":
			s, _ := jsonString(v)
			var t metav1.Time
			m.deleting = t.UnmarshalQueryParameter(s) == nil && !t.IsZero()
		}
	})
}

// jsonStringMap reads v as GetLabels and GetAnnotations read a map: null
// values as "", nil when v is not an object or holds a value other than
// a string or null.
func jsonStringMap(v []byte) map[string]string {
	var raw map[string]json.RawMessage
	if !isObjectStart(v) || kjson.UnmarshalCaseSensitivePreserveInts(v, &raw) != nil {
		return nil
	}
	out := make(map[string]string, len(raw))
	for k, e := range raw {
		if string(e) == "null" {
			out[k] = ""
			continue
		}
		s, ok := jsonString(e)
		if !ok {
			return nil
		}
		out[k] = s
	}
	return out
}
