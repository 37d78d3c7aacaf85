package config

import (
	"reflect"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/crowsnest-dev/crowsnest/config/internal/strictyaml"
)

// nodeDecoder is implemented by types that read themselves from a YAML node
// (Duration, and later expressions or templates compiled at load).
type nodeDecoder interface {
	decodeNode(n *yaml.Node) error
}

// extraDecoder is implemented by structs that take keys beyond their
// fields (a service's type block, a template's service blocks): it
// decodes the key's value with d and reports true, or reports false for
// an unknown field.
type extraDecoder interface {
	decodeExtra(d *strictyaml.Decoder, key, val *yaml.Node, path string) bool
}

// decodeStrict reads data into out (a pointer to a struct) following the
// yaml struct tags. Unlike yaml.Unmarshal it reports every problem with its
// field path: unknown and duplicate keys, values of the wrong type, and
// errors of nodeDecoder types.
func decodeStrict(data []byte, out any, errs *fieldErrors) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		errs.add("", 0, "not valid YAML: %s", strings.TrimPrefix(err.Error(), "yaml: "))
		return
	}
	if doc.Kind == 0 || len(doc.Content) == 0 {
		errs.add("", 0, "empty config: want a mapping with apiVersion %s and kind %s", APIVersion, Kind)
		return
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		errs.add("", root.Line, "expected a mapping at the top level, got %s", strictyaml.Describe(root))
		return
	}
	errs.lines = map[string]int{}
	newDecoder(errs, false).Decode(root, reflect.ValueOf(out).Elem(), "")
}

// newDecoder is the strict decoder with config's types: it reports to
// errs and records lines there (errs.lines must be set), and foldCase
// matches keys whatever their case, as Argo CD reads its ConfigMap.
func newDecoder(errs *fieldErrors, foldCase bool) *strictyaml.Decoder {
	return &strictyaml.Decoder{Report: errs.add, Lines: errs.lines, FoldCase: foldCase, Self: decodeSelf, Extra: decodeExtra}
}

// decodeSelf lets a nodeDecoder read itself.
func decodeSelf(v reflect.Value, n *yaml.Node) (bool, error) {
	if !v.CanAddr() {
		return false, nil
	}
	x, ok := v.Addr().Interface().(nodeDecoder)
	if !ok {
		return false, nil
	}
	return true, x.decodeNode(n)
}

// decodeExtra lets an extraDecoder read a key it has no field for.
func decodeExtra(d *strictyaml.Decoder, v reflect.Value, key, val *yaml.Node, path string) bool {
	if !v.CanAddr() {
		return false
	}
	x, ok := v.Addr().Interface().(extraDecoder)
	return ok && x.decodeExtra(d, key, val, path)
}
