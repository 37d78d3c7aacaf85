package render

import (
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"
	"text/template"
	"unicode/utf8"
)

// listFuncs are crowsnest's own list helpers; the others are sprig's
// (fromSprig). Lists are sprig's []any, never changed in place.
func listFuncs() template.FuncMap {
	return template.FuncMap{
		// first and last: sprig's refuse a string; these give its first or
		// last character (funcTests "first last").
		"first": func(v any) (any, error) { return listEnd("first", v, false) },
		"last":  func(v any) (any, error) { return listEnd("last", v, true) },
		// append, prepend and concat allocate their result once: sprig's
		// copy the list and then grow it, so a list grown by append in a
		// loop allocated 83 MiB before the budget stopped it
		// (hostileTemplates "a list growing by append" wants under 64).
		"append":  func(l, v any) ([]any, error) { return joinLists("append", l, []any{v}) },
		"prepend": func(l, v any) ([]any, error) { return joinLists("prepend", []any{v}, l) },
		"concat":  func(l ...any) ([]any, error) { return joinLists("concat", l...) },
		// has, without and uniq compare numbers by value: sprig's
		// (reflect.DeepEqual) finds no 3 in a JSON list [1, 3], whose
		// numbers are float64s (funcTests "has", "uniq"). uniq also caps
		// its comparisons (hostileTemplates "uniq of many lists").
		"has":     has,
		"without": without,
		"uniq":    uniq,
		// untilStep and seq: sprig's build a list of any length, and their
		// loops overflow and never end near the int limits (`seq
		// 9223372036854775797 7 9223372036854775806`), which a length check
		// does not see (funcTests "untilStep near the int limit", "seq near
		// the int limit"); until is sprig's, bounded by checkUntil.
		"untilStep": untilStep,
		"seq":       seq,
	}
}

// isList reports whether v is a list to sprig: a slice or an array, but
// not []byte, which sprig's helpers read as a string.
func isList(v any) bool {
	switch reflect.ValueOf(v).Kind() {
	case reflect.Slice:
		_, bytes := v.([]byte)
		return !bytes
	case reflect.Array:
		return true
	}
	return false
}

// list returns v's elements (nil is an empty list), or an error naming fn
// when v is not a list.
func list(fn string, v any) ([]any, error) {
	switch l := v.(type) {
	case nil:
		return nil, nil
	case []any:
		return l, nil
	}
	if !isList(v) {
		return nil, fmt.Errorf("%s: want a list, got %T", fn, v)
	}
	rv := reflect.ValueOf(v)
	out := make([]any, rv.Len())
	for i := range out {
		out[i] = rv.Index(i).Interface()
	}
	return out, nil
}

// listEnd is a list's first element, or its last when last is set (nil when
// the list is empty); of a string, its first or last character.
func listEnd(fn string, v any, last bool) (any, error) {
	if s, ok := v.(string); ok {
		if s == "" {
			return nil, nil
		}
		r, _ := utf8.DecodeRuneInString(s)
		if last {
			r, _ = utf8.DecodeLastRuneInString(s)
		}
		return string(r), nil
	}
	items, err := list(fn, v)
	if err != nil || len(items) == 0 {
		return nil, err
	}
	if last {
		return items[len(items)-1], nil
	}
	return items[0], nil
}

// joinLists is the elements of lists, in one allocation.
func joinLists(fn string, lists ...any) ([]any, error) {
	parts := make([][]any, len(lists))
	n := 0
	for i, l := range lists {
		items, err := list(fn, l)
		if err != nil {
			return nil, err
		}
		parts[i] = items
		n += len(items)
	}
	if err := checkLen(fn, n); err != nil {
		return nil, err
	}
	if n == 0 && fn == "concat" {
		return nil, nil // sprig's concat of empty lists is nil: null in JSON
	}
	out := make([]any, 0, n)
	for _, p := range parts {
		out = append(out, p...)
	}
	return out, nil
}

// without drops the elements equal to any of drop.
func without(v any, drop ...any) ([]any, error) {
	items, err := list("without", v)
	if err != nil {
		return nil, err
	}
	out := []any{}
	for _, x := range items {
		if !containsValue(drop, x) {
			out = append(out, x)
		}
	}
	return out, nil
}

// has reports whether the list holds needle (sprig's order: needle first,
// so `list | has x` reads well).
func has(needle, v any) (bool, error) {
	items, err := list("has", v)
	if err != nil {
		return false, err
	}
	return containsValue(items, needle), nil
}

func containsValue(items []any, x any) bool {
	for _, y := range items {
		if equalValues(x, y) {
			return true
		}
	}
	return false
}

// isNumber reports whether v is of a Go number kind.
func isNumber(v any) bool {
	if v == nil {
		return false
	}
	switch reflect.ValueOf(v).Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64:
		return true
	}
	return false
}

// equalValues is reflect.DeepEqual, except that numbers compare by value
// whatever their Go type: a literal 1 in a template equals the 1 that
// JSON decoding made a float64.
func equalValues(a, b any) bool {
	if isNumber(a) && isNumber(b) {
		return toFloat64(a) == toFloat64(b)
	}
	return reflect.DeepEqual(a, b)
}

// maxUniqCompares caps the comparisons uniq makes between elements that
// are neither strings nor numbers (lists, dicts), which it compares each
// with every kept one: ten thousand distinct lists would take fifty
// million deep comparisons. A million is a thousand distinct ones.
const maxUniqCompares = 1_000_000

// uniq keeps the first of equal elements, in order.
func uniq(v any) ([]any, error) {
	items, err := list("uniq", v)
	if err != nil {
		return nil, err
	}
	out := []any{}
	seen := map[any]bool{} // strings and numbers, the common case, in linear time
	compares := 0
	for _, x := range items {
		var key any
		if s, ok := x.(string); ok {
			key = "s" + s
		} else if isNumber(x) {
			if f := toFloat64(x); !math.IsNaN(f) {
				key = f
			}
		}
		if key != nil {
			if seen[key] {
				continue
			}
			seen[key] = true
		} else {
			if compares += len(out); compares > maxUniqCompares {
				return nil, fmt.Errorf("uniq: more than %d comparisons of lists or dicts", maxUniqCompares)
			}
			if containsValue(out, x) {
				continue
			}
		}
		out = append(out, x)
	}
	return out, nil
}

// checkUntil bounds sprig's until COUNT, the list 0, 1, ... COUNT-1 (0,
// -1, ... COUNT+1 for a negative COUNT), to maxListLen elements.
func checkUntil(args []any) error {
	c := toInt64(args[0])
	step := int64(1)
	if c < 0 {
		step = -1
	}
	_, err := rangeLen("until", 0, c, step)
	return err
}

// untilStep counts from start by step while short of stop, like Python's
// range; a step of 0 or one pointing away from stop gives an empty list.
func untilStep(start, stop, step any) ([]int, error) {
	from, by := toInt64(start), toInt64(step)
	n, err := rangeLen("untilStep", from, toInt64(stop), by)
	if err != nil {
		return nil, err
	}
	out := make([]int, 0, n)
	for i, v := uint64(0), from; i < n; i, v = i+1, v+by {
		out = append(out, int(v))
	}
	return out, nil
}

// rangeLen is the length of the list start, start+step, ... short of
// stop, or an error naming fn when it is over maxListLen.
func rangeLen(fn string, start, stop, step int64) (uint64, error) {
	n := rangeCount(start, stop, step, false)
	if n > maxListLen {
		return 0, fmt.Errorf("%s: list of %d elements is over the %d-element limit", fn, n, maxListLen)
	}
	return n, nil
}

// rangeCount is how many values start, start+step, ... lie before stop
// (or up to and including it), computed without overflow.
func rangeCount(start, stop, step int64, inclusive bool) uint64 {
	var span, by uint64
	switch {
	case step > 0 && stop >= start:
		span, by = uint64(stop)-uint64(start), uint64(step)
	case step < 0 && stop <= start:
		span, by = uint64(start)-uint64(stop), -uint64(step)
	default:
		return 0
	}
	if inclusive {
		return span/by + 1
	}
	if span == 0 {
		return 0
	}
	return (span-1)/by + 1
}

// seq works like the seq command and returns a string of numbers
// separated by spaces: seq END counts from 1, seq START END by 1 or -1,
// seq START STEP END by STEP; END is included when reached. Other
// argument counts, a step of 0 or one pointing away from END give "".
func seq(params ...any) (string, error) {
	var start, step, end int64
	switch len(params) {
	case 1:
		start, end = 1, toInt64(params[0])
	case 2:
		start, end = toInt64(params[0]), toInt64(params[1])
	case 3:
		start, step, end = toInt64(params[0]), toInt64(params[1]), toInt64(params[2])
	default:
		return "", nil
	}
	if len(params) < 3 {
		step = 1
		if end < start {
			step = -1
		}
	}
	if start == end {
		return strconv.FormatInt(start, 10), nil
	}
	n := rangeCount(start, end, step, true)
	if n > maxListLen {
		return "", fmt.Errorf("seq: %d numbers are over the %d-element limit", n, maxListLen)
	}
	parts := make([]string, 0, n)
	for i, v := uint64(0), start; i < n; i, v = i+1, v+step {
		parts = append(parts, strconv.FormatInt(v, 10))
	}
	return strings.Join(parts, " "), nil
}
