package render

import (
	"fmt"
	"reflect"
	"sort"
	"text/template"
	"unsafe"
)

// templateDict is a dict a template made (dict, pick, omit, fromJson). Only
// these may be changed by set and unset: the Application and the other
// variables are shared with the informer's cache and with concurrent
// renders, and must never be written.
type templateDict map[string]any

// dictFuncs are crowsnest's own dict helpers; get, hasKey, pluck, pick
// and omit are sprig's (fromSprig).
func dictFuncs() template.FuncMap {
	return template.FuncMap{
		// dict, set and unset: sprig's set and unset change any map, the
		// Application shared with the informer's cache included.
		"dict":  newDict,
		"set":   set,
		"unset": unset,
		// keys and values: sprig's come in map order, so a message would
		// change from one render to the next.
		"keys":   keys,
		"values": values,
		// dig: Compile's field chains call its field form (rewrite.go), and
		// sprig's walks only map[string]any (a label map is a
		// map[string]string).
		"dig": dig,
	}
}

// ownDict makes the dict sprig's pick or omit returned one set may change.
func ownDict(v any) any {
	if d, ok := v.(map[string]any); ok {
		return templateDict(d)
	}
	return v
}

// newDict pairs keys (printed as strings) with values; a key without a
// value gets "", as in sprig. A key that is a list or dict is an error
// (sprig prints it): dict takes any value without a size check, and a key
// is the one part it prints.
func newDict(kv ...any) (templateDict, error) {
	d := make(templateDict, (len(kv)+1)/2)
	for i := 0; i < len(kv); i += 2 {
		var v any = ""
		if i+1 < len(kv) {
			v = kv[i+1]
		}
		if k := kv[i]; k != nil {
			switch reflect.ValueOf(k).Kind() {
			case reflect.Slice, reflect.Array, reflect.Map, reflect.Struct, reflect.Pointer:
				if _, ok := k.([]byte); !ok {
					return nil, fmt.Errorf("dict: key %d is a %T, want a string", i/2+1, k)
				}
			}
		}
		d[toString(kv[i])] = v
	}
	return d, nil
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

func dictOf(fn string, m any) (map[string]any, error) {
	d, ok := entries(m)
	if !ok {
		return nil, fmt.Errorf("%s: want a dict, got %T", fn, m)
	}
	return d, nil
}

// set stores value at key in a dict the template made and returns it.
func set(m any, key string, value any) (templateDict, error) {
	d, ok := m.(templateDict)
	if !ok {
		return nil, fmt.Errorf("set: can only change a dict made in the template (dict, pick, omit, fromJson), got %T", m)
	}
	if reaches(value, d) {
		return nil, fmt.Errorf("set: the value of %q contains the dict itself", key)
	}
	d[key] = value
	return d, nil
}

// unset deletes key from a dict the template made and returns it.
func unset(m any, key string) (templateDict, error) {
	d, ok := m.(templateDict)
	if !ok {
		return nil, fmt.Errorf("unset: can only change a dict made in the template (dict, pick, omit, fromJson), got %T", m)
	}
	delete(d, key)
	return d, nil
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

// keys lists the keys of one or more dicts, sorted (duplicates kept, as in
// sprig: pipe to uniq).
func keys(dicts ...any) ([]string, error) {
	var out []string
	for _, m := range dicts {
		d, err := dictOf("keys", m)
		if err != nil {
			return nil, err
		}
		for k := range d {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out, nil
}

// values lists a dict's values, in the order of their sorted keys.
func values(m any) ([]any, error) {
	ks, err := keys(m)
	if err != nil {
		return nil, err
	}
	d, _ := entries(m)
	out := make([]any, len(ks))
	for i, k := range ks {
		out[i] = d[k]
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
