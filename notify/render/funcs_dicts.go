package render

import (
	"fmt"
	"maps"
	"reflect"
	"slices"
	"text/template"
	"unsafe"
)

// templateDict is a dict a template made (dict, pick, omit, fromJson). Only
// these may be changed by set and unset (checkOwnDict): the Application and the other
// variables are shared with the informer's cache and with concurrent
// renders, and must never be written.
type templateDict map[string]any

// dictFuncs are crowsnest's own dict helpers; dict, set, unset, get,
// hasKey, keys, pluck, pick and omit are sprig's (fromSprig).
func dictFuncs() template.FuncMap {
	return template.FuncMap{
		// values: sprig's come in map order, so a message would change from
		// one render to the next (funcTests "keys values").
		"values": values,
		// dig: Compile's field chains call its field form (rewrite.go), and
		// sprig's panics on a map that is not a map[string]any, such as a
		// label map (funcTests "dig").
		"dig": dig,
	}
}

// ownDict makes the dict sprig's dict, set, unset, pick or omit returned
// one set may change.
func ownDict(v any) any {
	if d, ok := v.(map[string]any); ok {
		return templateDict(d)
	}
	return v
}

// checkDictKeys refuses a key of sprig's dict KEY VALUE... that is a list
// or dict (sprig prints it: dict takes any value without a size check,
// and a key is the one part it prints), and makes a nil key (a missing
// field) "" where sprig would make it "<nil>".
func checkDictKeys(kv []any) error {
	for i := 0; i < len(kv); i += 2 {
		k := kv[i]
		if k == nil {
			kv[i] = ""
			continue
		}
		switch reflect.ValueOf(k).Kind() {
		case reflect.Slice, reflect.Array, reflect.Map, reflect.Struct, reflect.Pointer:
			if _, ok := k.([]byte); !ok {
				return fmt.Errorf("dict: key %d is a %T, want a string", i/2+1, k)
			}
		}
	}
	return nil
}

// checkOwnDict lets sprig's set and unset (DICT KEY ...) change only a
// dict the template made: sprig's change any map, the Application shared
// with the informer's cache and other renders included
// (TestSetNeverWritesData). The key must be a string, as text/template
// has it for sprig's own set (a missing field is no key); set also
// refuses a value that holds the dict.
func checkOwnDict(fn string) func([]any) error {
	return func(args []any) error {
		d, ok := args[0].(templateDict)
		if !ok {
			return fmt.Errorf("%s: can only change a dict made in the template (dict, pick, omit, fromJson), got %T", fn, args[0])
		}
		key, ok := args[1].(string)
		if !ok {
			return fmt.Errorf("%s: the key is a %T, want a string", fn, args[1])
		}
		if len(args) == 3 && reaches(args[2], d) {
			return fmt.Errorf("%s: the value of %q contains the dict itself", fn, key)
		}
		return nil
	}
}

// lookup reads key from a map with string keys; ok is false when the key
// is missing or m is not such a map.
func lookup(m any, key string) (any, bool) {
	switch d := m.(type) {
	case nil:
		return nil, false
	case map[string]any:
		v, ok := d[key]
		return v, ok
	case templateDict:
		v, ok := d[key]
		return v, ok
	}
	rv := reflect.ValueOf(m)
	for rv.Kind() == reflect.Pointer || rv.Kind() == reflect.Interface {
		if rv.IsNil() {
			return nil, false
		}
		rv = rv.Elem()
	}
	if rv.Kind() != reflect.Map || rv.Type().Key().Kind() != reflect.String {
		return nil, false
	}
	x := rv.MapIndex(reflect.ValueOf(key).Convert(rv.Type().Key()))
	if !x.IsValid() {
		return nil, false
	}
	return x.Interface(), true
}

// entries returns a copy of a string-keyed map's entries; ok is false
// when m is not one (nil is an empty one).
func entries(m any) (map[string]any, bool) {
	switch d := m.(type) {
	case nil:
		return map[string]any{}, true
	case map[string]any:
		return d, true
	case templateDict:
		return d, true
	}
	rv := reflect.ValueOf(m)
	if rv.Kind() != reflect.Map || rv.Type().Key().Kind() != reflect.String {
		return nil, false
	}
	out := make(map[string]any, rv.Len())
	it := rv.MapRange()
	for it.Next() {
		out[it.Key().String()] = it.Value().Interface()
	}
	return out, true
}

// reaches reports whether v is, or holds, the dict d: set refuses such a
// value, since printing a dict that holds itself would never end. Each
// list and dict is looked into once, so a value that holds the same parts
// many times (`list $l $l`, doubled again and again) costs its distinct
// parts, not its printed size.
func reaches(v any, d templateDict) bool {
	target := reflect.ValueOf(d).UnsafePointer()
	type part struct {
		p unsafe.Pointer
		n int // a slice of the first n elements of a list is another part
	}
	seen := map[part]bool{}
	var walk func(v reflect.Value) bool
	walk = func(v reflect.Value) bool {
		for v.Kind() == reflect.Interface && !v.IsNil() {
			v = v.Elem()
		}
		if (v.Kind() != reflect.Map && v.Kind() != reflect.Slice) || v.IsNil() {
			return false
		}
		switch v.Type().Elem().Kind() {
		case reflect.Interface, reflect.Map, reflect.Slice:
		default:
			return false // a list of strings or numbers holds no dict
		}
		k := part{v.UnsafePointer(), v.Len()}
		if v.Kind() == reflect.Map && k.p == target {
			return true
		}
		if seen[k] {
			return false
		}
		seen[k] = true
		if v.Kind() == reflect.Map {
			for it := v.MapRange(); it.Next(); {
				if walk(it.Value()) {
					return true
				}
			}
			return false
		}
		for i := range v.Len() {
			if walk(v.Index(i)) {
				return true
			}
		}
		return false
	}
	return walk(reflect.ValueOf(v))
}

// sortedStrings sorts the keys sprig's keys returned: its come in map
// order, so a message would change from one render to the next.
func sortedStrings(v any) any {
	if l, ok := v.([]string); ok {
		slices.Sort(l)
	}
	return v
}

// values lists a dict's values, in the order of their sorted keys.
func values(m any) ([]any, error) {
	d, ok := entries(m)
	if !ok {
		return nil, fmt.Errorf("values: want a dict, got %T", m)
	}
	out := make([]any, 0, len(d))
	for _, k := range slices.Sorted(maps.Keys(d)) {
		out = append(out, d[k])
	}
	return out, nil
}

// dig has two forms. sprig's: dig KEY... DEFAULT DICT walks nested dicts
// and gives DEFAULT when a key is missing. The field form, dig VALUE
// KEY..., is what Compile rewrites a field chain (.app.status.x) into: it
// walks maps and exported struct fields and gives nil for anything
// missing, so a missing field renders as empty instead of failing on a nil
// intermediate. The forms differ in their last argument: a key (a string)
// in the field form, a dict (or nil) in sprig's.
func dig(args ...any) (any, error) {
	if n := len(args); n >= 2 {
		if _, ok := args[n-1].(string); ok {
			return digField(args[0], args[1:])
		}
	}
	if len(args) < 3 {
		return nil, fmt.Errorf("dig: want KEY... DEFAULT DICT, got %d arguments", len(args))
	}
	def, v := args[len(args)-2], args[len(args)-1]
	for _, k := range args[:len(args)-2] {
		key, ok := k.(string)
		if !ok {
			return nil, fmt.Errorf("dig: keys must be strings, got %T", k)
		}
		if v, ok = lookup(v, key); !ok {
			return def, nil
		}
	}
	return v, nil
}

func digField(v any, path []any) (any, error) {
	for _, p := range path {
		k, ok := p.(string)
		if !ok {
			return nil, fmt.Errorf("dig: keys must be strings, got %T", p)
		}
		if v == nil {
			return nil, nil
		}
		if m, ok := v.(map[string]any); ok {
			v = m[k]
			continue
		}
		v = reflectField(reflect.ValueOf(v), k)
	}
	return v, nil
}

func reflectField(rv reflect.Value, k string) any {
	for rv.Kind() == reflect.Pointer || rv.Kind() == reflect.Interface {
		if rv.IsNil() {
			return nil
		}
		rv = rv.Elem()
	}
	switch rv.Kind() {
	case reflect.Map:
		v, _ := lookup(rv.Interface(), k)
		return v
	case reflect.Struct:
		f, ok := rv.Type().FieldByName(k)
		if !ok || !f.IsExported() {
			return nil
		}
		x, err := rv.FieldByIndexErr(f.Index)
		if err != nil {
			return nil
		}
		return x.Interface()
	}
	return nil
}
