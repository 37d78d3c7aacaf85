package notify

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"text/template"
)

// Lists are sprig's: []any, never changed in place (append and the rest
// return a new list). A function that wants a list takes nil (a missing
// field) as an empty one and anything else that is not a slice or array
// as an error naming the function.
func listFuncs() template.FuncMap {
	return template.FuncMap{
		"list":      func(v ...any) []any { return v },
		"first":     first,
		"last":      last,
		"rest":      func(v any) ([]any, error) { return sliceOf("rest", v, 1, 0) },
		"initial":   func(v any) ([]any, error) { return sliceOf("initial", v, 0, 1) },
		"append":    func(l, v any) ([]any, error) { return joinLists("append", l, []any{v}) },
		"prepend":   func(l, v any) ([]any, error) { return joinLists("prepend", []any{v}, l) },
		"concat":    func(l ...any) ([]any, error) { return joinLists("concat", l...) },
		"reverse":   reverse,
		"compact":   compact,
		"without":   without,
		"has":       has,
		"uniq":      uniq,
		"sortAlpha": sortAlpha,
		"until":     until,
		"untilStep": untilStep,
		"seq":       seq,
	}
}

// list returns v's elements, or an error naming fn when v is not a list.
func list(fn string, v any) ([]any, error) {
	items, ok := listItems(v)
	if !ok {
		return nil, fmt.Errorf("%s: want a list, got %T", fn, v)
	}
	return items, nil
}

// first is a list's first element (nil when empty); of a string, its
// first character.
func first(v any) (any, error) {
	if s, ok := v.(string); ok {
		return firstRune(s), nil
	}
	items, err := list("first", v)
	if err != nil || len(items) == 0 {
		return nil, err
	}
	return items[0], nil
}

// last is a list's last element (nil when empty); of a string, its last
// character.
func last(v any) (any, error) {
	if s, ok := v.(string); ok {
		return lastRune(s), nil
	}
	items, err := list("last", v)
	if err != nil || len(items) == 0 {
		return nil, err
	}
	return items[len(items)-1], nil
}

// sliceOf drops head elements from the front and tail from the back.
func sliceOf(fn string, v any, head, tail int) ([]any, error) {
	items, err := list(fn, v)
	if err != nil {
		return nil, err
	}
	if len(items) < head+tail {
		return []any{}, nil
	}
	return append([]any{}, items[head:len(items)-tail]...), nil
}

func joinLists(fn string, lists ...any) ([]any, error) {
	out := []any{}
	for _, l := range lists {
		items, err := list(fn, l)
		if err != nil {
			return nil, err
		}
		if err := checkLen(fn, len(out)+len(items)); err != nil {
			return nil, err
		}
		out = append(out, items...)
	}
	return out, nil
}

func reverse(v any) ([]any, error) {
	items, err := list("reverse", v)
	if err != nil {
		return nil, err
	}
	out := make([]any, len(items))
	for i, x := range items {
		out[len(items)-1-i] = x
	}
	return out, nil
}

// compact drops empty elements ("", 0, nil, false, empty lists and dicts).
func compact(v any) ([]any, error) {
	items, err := list("compact", v)
	if err != nil {
		return nil, err
	}
	out := []any{}
	for _, x := range items {
		if !isEmpty(x) {
			out = append(out, x)
		}
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

// sortAlpha prints a list's elements and sorts them; a value that is not a
// list becomes a list of one.
func sortAlpha(v any) []string {
	out := toStrings(v)
	sort.Strings(out)
	return out
}

// until is the list 0, 1, ... n-1 (0, -1, ... n+1 for a negative n).
func until(n any) ([]int, error) {
	c := toInt64(n)
	step := int64(1)
	if c < 0 {
		step = -1
	}
	return intRange("until", 0, c, step)
}

// untilStep counts from start by step while short of stop, like Python's
// range; a step of 0 or one pointing away from stop gives an empty list.
func untilStep(start, stop, step any) ([]int, error) {
	return intRange("untilStep", toInt64(start), toInt64(stop), toInt64(step))
}

func intRange(fn string, start, stop, step int64) ([]int, error) {
	n := rangeCount(start, stop, step, false)
	if n > maxListLen {
		return nil, fmt.Errorf("%s: list of %d elements is over the %d-element limit", fn, n, maxListLen)
	}
	out := make([]int, 0, n)
	for i, v := uint64(0), start; i < n; i, v = i+1, v+step {
		out = append(out, int(v))
	}
	return out, nil
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
