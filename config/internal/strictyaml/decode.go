package strictyaml

import (
	"reflect"
	"sort"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/crowsnest-dev/crowsnest/config/internal/fieldpath"
)

// Decoder reads YAML nodes into Go values following their yaml struct
// tags. Unlike yaml.Unmarshal it goes on after a problem and reports each
// one with its field path: unknown and duplicate keys (with the likely
// key when one is close), values of the wrong type, and the errors of
// types that read themselves.
type Decoder struct {
	// Report records a problem with the field at path, read from line.
	Report func(path string, line int, format string, args ...any)
	// Lines, when not nil, gets the line each field path was read from,
	// so later checks can point into the file too.
	Lines map[string]int
	// FoldCase matches a key to a field whatever its case when no field
	// has it exactly: argocd-notifications-cm values are read by Argo CD
	// through encoding/json, which does (`priorityID` sets priorityId).
	FoldCase bool
	// Self, when set, decodes a value whose type reads itself from a node
	// (a duration, a credentials reference): handled says it did, and err
	// is reported at the value's path.
	Self func(v reflect.Value, n *yaml.Node) (handled bool, err error)
	// Extra, when set, is asked about a key the struct v has no field for
	// (a service's type block, a template's service blocks): it decodes
	// the key's value with d and reports true, or reports false for an
	// unknown field.
	Extra func(d *Decoder, v reflect.Value, key, val *yaml.Node, path string) bool
}

// Decode reads n into v, which must be settable; path is n's field path
// ("" at the top level). An empty (null) value leaves v as it is.
func (d *Decoder) Decode(n *yaml.Node, v reflect.Value, path string) {
	if n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	if _, ok := d.Lines[path]; !ok && d.Lines != nil {
		d.Lines[path] = n.Line
	}
	if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
		return // an empty value leaves the default
	}
	if d.Self != nil {
		if handled, err := d.Self(v, n); handled {
			if err != nil {
				d.Report(path, n.Line, "%s", err.Error())
			}
			return
		}
	}
	switch v.Kind() {
	case reflect.Pointer:
		elem := reflect.New(v.Type().Elem())
		d.Decode(n, elem.Elem(), path)
		v.Set(elem)
	case reflect.Struct:
		d.decodeStruct(n, v, path)
	case reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			d.mismatch(n, path, "a list")
			return
		}
		s := reflect.MakeSlice(v.Type(), len(n.Content), len(n.Content))
		for i, item := range n.Content {
			d.Decode(item, s.Index(i), fieldpath.Index(path, i))
		}
		v.Set(s)
	case reflect.Map:
		d.decodeMap(n, v, path)
	case reflect.String:
		if n.Kind != yaml.ScalarNode || n.Tag != "!!str" {
			d.mismatch(n, path, "a string")
			return
		}
		v.SetString(n.Value)
	case reflect.Bool:
		b, err := strconv.ParseBool(n.Value)
		if n.Kind != yaml.ScalarNode || n.Tag != "!!bool" || err != nil {
			d.mismatch(n, path, "true or false")
			return
		}
		v.SetBool(b)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		i, err := strconv.ParseInt(n.Value, 0, v.Type().Bits())
		if n.Kind != yaml.ScalarNode || n.Tag != "!!int" || err != nil {
			d.mismatch(n, path, "an integer")
			return
		}
		v.SetInt(i)
	case reflect.Float32, reflect.Float64:
		f, err := strconv.ParseFloat(n.Value, v.Type().Bits())
		if n.Kind != yaml.ScalarNode || (n.Tag != "!!float" && n.Tag != "!!int") || err != nil {
			d.mismatch(n, path, "a number")
			return
		}
		v.SetFloat(f)
	default:
		d.Report(path, n.Line, "internal error: cannot decode into %s", v.Type())
	}
}

func (d *Decoder) decodeStruct(n *yaml.Node, v reflect.Value, path string) {
	if n.Kind != yaml.MappingNode {
		d.mismatch(n, path, "a mapping")
		return
	}
	fields := map[string][]int{}
	t := v.Type()
	for _, f := range Fields(t) {
		fields[f.Name] = f.Index
	}
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, val := n.Content[i], n.Content[i+1]
		p := fieldpath.Join(path, k.Value)
		if seen[k.Value] {
			d.Report(p, k.Line, "duplicate key")
			continue
		}
		seen[k.Value] = true
		fi, ok := fields[k.Value]
		if !ok && d.Extra != nil && d.Extra(d, v, k, val, p) {
			continue
		}
		if !ok && d.FoldCase {
			fi, ok = foldField(fields, k.Value)
		}
		if !ok {
			if s := suggest(k.Value, fields); s != "" {
				d.Report(p, k.Line, "unknown field (did you mean %q?)", s)
			} else {
				d.Report(p, k.Line, "unknown field")
			}
			continue
		}
		if d.Lines != nil {
			d.Lines[p] = k.Line // a block's key line reads better than its first child's
		}
		if intOrString(t.FieldByIndex(fi), val) {
			v.FieldByIndex(fi).SetString(val.Value)
			continue
		}
		d.Decode(val, v.FieldByIndex(fi), p)
	}
}

// Field is a key of a struct: its yaml name and the field's index
// (reflect.Value.FieldByIndex), which goes through inline embedded
// structs.
type Field struct {
	Name  string
	Index []int
}

// Fields lists the keys of struct type t, in field order: fields
// tagged with a yaml name, and the keys of embedded structs tagged
// `yaml:",inline"` as if they were t's own (a block type that extends
// another, as teams-workflows' block extends teams'). Every reader and
// walker of config structs goes through it, so they agree on the keys.
func Fields(t reflect.Type) []Field {
	var out []Field
	for i := range t.NumField() {
		f := t.Field(i)
		name, opts, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		switch {
		case !f.IsExported():
		case f.Anonymous && name == "" && opts == "inline" && f.Type.Kind() == reflect.Struct:
			for _, sub := range Fields(f.Type) {
				out = append(out, Field{sub.Name, append([]int{i}, sub.Index...)})
			}
		case name != "" && name != "-":
			out = append(out, Field{name, []int{i}})
		}
	}
	return out
}

// foldField finds the field whose tag matches key ignoring case.
func foldField(fields map[string][]int, key string) ([]int, bool) {
	for tag, i := range fields {
		if strings.EqualFold(tag, key) {
			return i, true
		}
	}
	return nil, false
}

func (d *Decoder) decodeMap(n *yaml.Node, v reflect.Value, path string) {
	if n.Kind != yaml.MappingNode {
		d.mismatch(n, path, "a mapping")
		return
	}
	if v.Type().Key().Kind() != reflect.String {
		d.Report(path, n.Line, "internal error: map keys must be strings")
		return
	}
	m := reflect.MakeMapWithSize(v.Type(), len(n.Content)/2)
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, val := n.Content[i], n.Content[i+1]
		p := path + "[" + k.Value + "]"
		if m.MapIndex(reflect.ValueOf(k.Value).Convert(v.Type().Key())).IsValid() {
			d.Report(p, k.Line, "duplicate key")
			continue
		}
		elem := reflect.New(v.Type().Elem()).Elem()
		d.Decode(val, elem, p)
		m.SetMapIndex(reflect.ValueOf(k.Value).Convert(v.Type().Key()), elem)
	}
	v.Set(m)
}

func (d *Decoder) mismatch(n *yaml.Node, path, want string) {
	d.Report(path, n.Line, "expected %s, got %s", want, Describe(n))
}

// Describe names what a node holds, for error messages. Scalar values are
// cut short so a pasted blob does not flood the output.
func Describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		v := n.Value
		if len(v) > 40 {
			v = v[:40] + "..."
		}
		switch n.Tag {
		case "!!int":
			return "integer " + v
		case "!!float":
			return "number " + v
		case "!!bool":
			return "boolean " + v
		case "!!null":
			return "null"
		default:
			return "string " + strconv.Quote(v)
		}
	default:
		return "an unsupported YAML node"
	}
}

// suggest returns the known field closest to an unknown key, if it is a
// likely typo (edit distance at most 2).
func suggest(key string, fields map[string][]int) string {
	names := make([]string, 0, len(fields))
	for f := range fields {
		names = append(names, f)
	}
	sort.Strings(names)
	best, bestDist := "", 3
	for _, f := range names {
		if dist := levenshtein(strings.ToLower(key), strings.ToLower(f)); dist < bestDist {
			best, bestDist = f, dist
		}
	}
	return best
}

func levenshtein(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// intOrString reports whether val is an integer for a string field tagged
// `config:"intOrString"`: a setting Argo CD reads as either (GitHub's
// appID and installationID), kept as its decimal text.
func intOrString(f reflect.StructField, val *yaml.Node) bool {
	return f.Tag.Get("config") == "intOrString" && f.Type.Kind() == reflect.String &&
		val.Kind == yaml.ScalarNode && val.Tag == "!!int"
}
