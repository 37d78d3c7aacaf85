package valuesize

import (
	"fmt"
	"reflect"
	"unsafe"
)

var (
	errorType    = reflect.TypeFor[error]()
	stringerType = reflect.TypeFor[fmt.Stringer]()
	bytesType    = reflect.TypeFor[[]byte]()
)

// Printed returns a lower bound of the bytes fmt, encoding/json or YAML
// print v in (the bytes of its strings, and one for every other value,
// element or key), or a number over limit as soon as it is known to be
// larger, and how many values it looked at. A list or map that appears
// several times counts each time, as printing repeats it, but is walked
// once; one that contains itself counts as over the limit. Pointers and
// values with a String or Error method count as one byte and are not
// followed: fmt prints a nested pointer as an address, and only trusted
// input (an Application), never a value a template or an expression
// builds, has them.
func Printed(v reflect.Value, limit int) (size, work int) {
	s := sizer{limit: limit}
	return s.size(v), s.work
}

type sizer struct {
	limit, work int
	seen        map[sizeKey]int // -1 while being walked
}

type sizeKey struct {
	p unsafe.Pointer
	n int
	t reflect.Type
}

func (s *sizer) size(v reflect.Value) int {
	s.work++
	for v.Kind() == reflect.Interface {
		if v.IsNil() {
			return 1
		}
		v = v.Elem()
	}
	if !v.IsValid() {
		return 1
	}
	if v.Type().Implements(stringerType) || v.Type().Implements(errorType) {
		return 1
	}
	switch v.Kind() {
	case reflect.String:
		return v.Len()
	case reflect.Slice, reflect.Map:
		if v.IsNil() || v.Len() == 0 {
			return 1
		}
		if v.Type() == bytesType {
			return v.Len()
		}
		key := sizeKey{p: v.UnsafePointer(), n: v.Len(), t: v.Type()}
		if n, ok := s.seen[key]; ok {
			if n < 0 {
				return s.limit + 1
			}
			return n
		}
		if s.seen == nil {
			s.seen = map[sizeKey]int{}
		}
		s.seen[key] = -1
		n := s.elems(v)
		s.seen[key] = n
		return n
	case reflect.Array:
		return s.elems(v)
	case reflect.Struct:
		n := 1
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				n += 1 + s.size(v.Field(i))
				if n > s.limit {
					return n
				}
			}
		}
		return n
	}
	return 1
}

// elems sums the sizes of a list's elements or a dict's keys and values,
// one more for each separator, stopping past the limit.
func (s *sizer) elems(v reflect.Value) int {
	n := 1
	if v.Kind() == reflect.Map {
		for it := v.MapRange(); it.Next(); {
			n += 1 + s.size(it.Key()) + s.size(it.Value())
			if n > s.limit {
				return n
			}
		}
		return n
	}
	for i := range v.Len() {
		n += 1 + s.size(v.Index(i))
		if n > s.limit {
			return n
		}
	}
	return n
}
