package watcher

import (
	"bytes"
	"encoding/json"
	"fmt"

	kjson "sigs.k8s.io/json"
)

// appJSON is the part of an Application crowsnest keeps (see
// TrimApplication), as sigs.k8s.io/json reads it for client-go's
// unstructured decoder (case-sensitive keys, integers as int64): the
// named fields are decoded, everything else (managedFields,
// status.resources, status.history) is scanned past without being built.
// A field that is JSON null counts as absent, and a key given twice
// (which the apiserver never writes) merges into metadata and status
// where a map would keep the last.
type appJSON struct {
	APIVersion any         `json:"apiVersion"`
	Kind       any         `json:"kind"`
	Metadata   *metaJSON   `json:"metadata"`
	Spec       any         `json:"spec"`
	Operation  any         `json:"operation"`
	Status     *statusJSON `json:"status"`
}

// metaJSON holds keptMetadata.
type metaJSON struct {
	Name              any `json:"name"`
	Namespace         any `json:"namespace"`
	UID               any `json:"uid"`
	ResourceVersion   any `json:"resourceVersion"`
	Generation        any `json:"generation"`
	CreationTimestamp any `json:"creationTimestamp"`
	DeletionTimestamp any `json:"deletionTimestamp"`
	Labels            any `json:"labels"`
	Annotations       any `json:"annotations"`
}

// statusJSON holds keptAppStatus.
type statusJSON struct {
	Sync           any          `json:"sync"`
	Health         any          `json:"health"`
	OperationState *opStateJSON `json:"operationState"`
	Summary        any          `json:"summary"`
	Conditions     any          `json:"conditions"`
	SourceType     any          `json:"sourceType"`
	SourceTypes    any          `json:"sourceTypes"`
}

// object returns the Application as a trimmed unstructured object, the
// same TrimApplication makes of the whole one (not compacted: it is
// stored as JSON at once).
func (a *appJSON) object() map[string]any {
	out := map[string]any{"apiVersion": a.APIVersion, "kind": a.Kind, "metadata": nil}
	if a.Metadata != nil {
		out["metadata"] = a.Metadata.value()
	}
	setIf(out, "spec", a.Spec)
	setIf(out, "operation", a.Operation)
	if a.Status != nil {
		if st := a.Status.value(); len(st) > 0 {
			out["status"] = st
		}
	}
	return out
}

func (m *metaJSON) value() map[string]any {
	out := make(map[string]any, 9)
	setIf(out, "name", m.Name)
	setIf(out, "namespace", m.Namespace)
	setIf(out, "uid", m.UID)
	setIf(out, "resourceVersion", m.ResourceVersion)
	setIf(out, "generation", m.Generation)
	setIf(out, "creationTimestamp", m.CreationTimestamp)
	setIf(out, "deletionTimestamp", m.DeletionTimestamp)
	setIf(out, "labels", m.Labels)
	if ann, ok := m.Annotations.(map[string]any); ok {
		delete(ann, lastAppliedAnnotation)
	}
	setIf(out, "annotations", m.Annotations)
	return out
}

func (s *statusJSON) value() map[string]any {
	out := map[string]any{}
	setIf(out, "sync", s.Sync)
	setIf(out, "health", s.Health)
	if s.OperationState != nil {
		setIf(out, "operationState", s.OperationState.v)
	}
	setIf(out, "summary", s.Summary)
	setIf(out, "conditions", s.Conditions)
	setIf(out, "sourceType", s.SourceType)
	setIf(out, "sourceTypes", s.SourceTypes)
	return out
}

func setIf(m map[string]any, k string, v any) {
	if v != nil {
		m[k] = v
	}
}

// opStateJSON is status.operationState without syncResult.resources (see
// trimOperationState), which is as long as the Application has
// resources. The parts are held as raw JSON until that one is dropped.
type opStateJSON struct{ v any }

// UnmarshalJSON decodes b except syncResult.resources. An error (a number
// no float64 holds, which the apiserver never stores) aborts the whole
// object's decode, so it is not returned as a type error, which would
// make the caller keep what was decoded so far (isTypeError).
func (o *opStateJSON) UnmarshalJSON(b []byte) error {
	if err := o.decode(b); err != nil {
		return fmt.Errorf("status.operationState: %v", err) //nolint:errorlint // deliberately not wrapped, see above
	}
	return nil
}

func (o *opStateJSON) decode(b []byte) error {
	fields, ok := rawFields(b)
	if !ok {
		return kjson.UnmarshalCaseSensitivePreserveInts(b, &o.v)
	}
	sr, hasResult := fields["syncResult"]
	delete(fields, "syncResult")
	op, err := decodeFields(fields)
	if err != nil {
		return err
	}
	if hasResult {
		var v any
		if srFields, ok := rawFields(sr); ok {
			delete(srFields, "resources")
			v, err = decodeFields(srFields)
		} else {
			err = kjson.UnmarshalCaseSensitivePreserveInts(sr, &v)
		}
		if err != nil {
			return err
		}
		op["syncResult"] = v
	}
	o.v = op
	return nil
}

// rawFields splits a JSON object into its fields, undecoded; false when
// b is not an object.
func rawFields(b []byte) (map[string]json.RawMessage, bool) {
	var fields map[string]json.RawMessage
	if !isObject(b) || kjson.UnmarshalCaseSensitivePreserveInts(b, &fields) != nil {
		return nil, false
	}
	return fields, true
}

// decodeFields decodes each field of rawFields.
func decodeFields(fields map[string]json.RawMessage) (map[string]any, error) {
	out := make(map[string]any, len(fields))
	for k, raw := range fields {
		var v any
		if err := kjson.UnmarshalCaseSensitivePreserveInts(raw, &v); err != nil {
			return nil, err
		}
		out[k] = v
	}
	return out, nil
}

func isObject(b []byte) bool {
	b = bytes.TrimLeft(b, " \t\r\n")
	return len(b) > 0 && b[0] == '{'
}
