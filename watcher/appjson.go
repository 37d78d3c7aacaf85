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
// the apiserver: reduced to what crowsnest keeps (reduceApp), kept as
// those bytes, and its view read from them in one decode (viewJSON), the
// same AppFromObject reads from the decoded, trimmed object. A bookmark
// keeps its annotations too: the reflector reads the end of a streaming
// list's initial events there.
// scratch is reduceApp's.
func decodeApp(b []byte, bookmark bool, scratch *[]byte) (*storedApp, error) {
	r := reduceApp(b, scratch)
	if !numbersFit(r.json) {
		return nil, errNumberRange
	}
	var v viewJSON
	err := kjson.UnmarshalCaseSensitivePreserveInts(r.json, &v)
	if err != nil && !isTypeError(err) {
		return nil, err //nolint:wrapcheck // never: the scanner checked b; the caller says what it read
	}
	m := &v.Metadata
	s := &storedApp{json: r.json}
	s.Name, s.Namespace, s.UID, s.ResourceVersion, s.Generation = m.name, m.namespace, m.uid, r.resourceVersion, r.generation
	if bookmark {
		s.Annotations = m.annotations
	}
	if err != nil {
		named, _ := namedTypeError(err)
		s.err = fmt.Errorf("reading Application %s/%s: %w", m.namespace, m.name, named)
		return s, nil
	}
	a := viewOf(&appShape{Spec: v.Spec, Operation: v.Operation, Status: v.Status})
	a.Namespace, a.Name, a.UID, a.ResourceVersion, a.generation = m.namespace, m.name, string(m.uid), r.resourceVersion, r.generation
	a.Labels, a.Annotations, a.Deleting = m.labels, m.annotations, m.deleting
	s.view = a
	return s, nil
}

// viewJSON is what the view reads of an Application: appShape's fields
// and the metadata as unstructured.Unstructured's getters read it.
type viewJSON struct {
	Metadata  viewMeta       `json:"metadata"`
	Spec      appSpecShape   `json:"spec"`
	Operation map[string]any `json:"operation,omitempty"`
	Status    appStatusShape `json:"status"`
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

// UnmarshalJSON reads the metadata object b; it never fails.
func (m *viewMeta) UnmarshalJSON(b []byte) error {
	_, _ = objectFields(b, 0, func(key []byte, s, e int) {
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
	return nil
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
