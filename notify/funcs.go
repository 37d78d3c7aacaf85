package notify

import (
	"fmt"
	"maps"
	"math"
	"reflect"
	"strconv"
	"strings"
	"text/template"
	"time"
)

// The function names live in one list, config.TemplateFuncNames: config
// checks templates against it at load and FuncMap implements exactly it
// (TestFuncMapMatchesConfig compares both ways).

// Limits on what one helper call may build, so a template cannot eat the
// memory from a small config value (`repeat`, `until`, `seq`, doubling a
// string or a list in a loop). MaxRenderedSize bounds the printed output;
// these bound the values a template builds on the way.
const (
	// maxListLen caps the elements of a list a helper returns (until,
	// untilStep, seq, append, concat): far above any real message.
	maxListLen = 10000
	// maxStringSize caps a string a helper returns (1 MiB): four times a
	// whole rendered field.
	maxStringSize = 1 << 20
	// maxRepeat caps repeat's count and indent's width.
	maxRepeat = 10000
)

// FuncMap returns the template helpers bound to the clock now (nil means
// time.Now). The names are exactly config.TemplateFuncNames, with sprig's
// argument order and meaning; the set is hermetic: no environment, files
// or network. Where sprig panics or quietly returns a zero value on bad
// input (a broken regular expression, division by zero, a bad time zone),
// these return an error that names the function.
func FuncMap(now func() time.Time) template.FuncMap {
	if now == nil {
		now = time.Now
	}
	m := template.FuncMap{}
	for _, part := range []template.FuncMap{
		stringFuncs(), regexFuncs(), defaultFuncs(), listFuncs(), dictFuncs(),
		mathFuncs(), encodingFuncs(), timeFuncs(now), repoFuncs(),
	} {
		maps.Copy(m, part)
	}
	return m
}

func defaultFuncs() template.FuncMap {
	return template.FuncMap{
		"default":  dfault,
		"empty":    isEmpty,
		"coalesce": coalesce,
		"ternary":  ternary,
		"required": required,
		"fail":     func(msg any) (string, error) { return "", fmt.Errorf("%s", toString(msg)) },
		"orEmpty":  orEmpty,
	}
}

// repoFuncs are argocd-notifications' repo helpers as plain functions, for
// pipelines (`.app.spec.source.repoURL | repoURLToHTTPS`); .repo holds the
// same ones for `call`.
func repoFuncs() template.FuncMap {
	return template.FuncMap{
		"repoURLToHTTPS": func(v any) string { return RepoURLToHTTPS(toString(v)) },
		"repoFullName":   func(v any) string { return FullNameByRepoURL(toString(v)) },
	}
}

// checkSize returns an error naming fn when s is over maxStringSize.
func checkSize(fn string, n int) error {
	if n > maxStringSize {
		return fmt.Errorf("%s: result of %d bytes is over the %d-byte limit", fn, n, maxStringSize)
	}
	return nil
}

// checkLen returns an error naming fn when a list of n is over maxListLen.
func checkLen(fn string, n int) error {
	if n > maxListLen {
		return fmt.Errorf("%s: list of %d elements is over the %d-element limit", fn, n, maxListLen)
	}
	return nil
}

func toString(v any) string {
	switch s := v.(type) {
	case nil:
		return ""
	case string:
		return s
	case []byte:
		return string(s)
	case fmt.Stringer:
		return s.String()
	case error:
		return s.Error()
	}
	return fmt.Sprint(v)
}

func orEmpty(v any) any {
	if v == nil {
		return ""
	}
	return v
}

func dfault(def any, given ...any) any {
	if len(given) == 0 || isEmpty(given[0]) {
		return def
	}
	return given[0]
}

func isEmpty(v any) bool {
	if v == nil {
		return true
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.String, reflect.Slice, reflect.Map, reflect.Array:
		return rv.Len() == 0
	case reflect.Bool:
		return !rv.Bool()
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return rv.Int() == 0
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return rv.Uint() == 0
	case reflect.Float32, reflect.Float64:
		return rv.Float() == 0
	case reflect.Pointer, reflect.Interface:
		return rv.IsNil()
	}
	return false
}

func coalesce(v ...any) any {
	for _, x := range v {
		if !isEmpty(x) {
			return x
		}
	}
	return nil
}

// ternary returns yes when cond is true in text/template's sense (so a
// missing field, nil, is false rather than an argument error).
func ternary(yes, no, cond any) any {
	if t, _ := template.IsTrue(cond); t {
		return yes
	}
	return no
}

// required fails the render with msg when v is nil or an empty string, as
// Helm's required does.
func required(msg string, v any) (any, error) {
	if s, ok := v.(string); v == nil || ok && s == "" {
		return v, fmt.Errorf("%s", msg)
	}
	return v, nil
}

// toInt64 converts like sprig (spf13/cast): numbers (floats truncated),
// bools as 0/1, decimal strings; anything else is 0.
func toInt64(v any) int64 {
	switch n := v.(type) {
	case nil:
		return 0
	case int:
		return int64(n)
	case int64:
		return n
	case float64:
		return floatToInt64(n)
	case string:
		return parseInt64(n)
	case bool:
		if n {
			return 1
		}
		return 0
	case time.Duration:
		return int64(n)
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return rv.Int()
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		u := rv.Uint()
		if u > math.MaxInt64 {
			return math.MaxInt64
		}
		return int64(u)
	case reflect.Float32, reflect.Float64:
		return floatToInt64(rv.Float())
	case reflect.String:
		return parseInt64(rv.String())
	}
	return 0
}

func parseInt64(s string) int64 {
	s = strings.TrimSpace(s)
	if i, err := strconv.ParseInt(s, 10, 64); err == nil {
		return i
	}
	if f, err := strconv.ParseFloat(s, 64); err == nil {
		return floatToInt64(f)
	}
	return 0
}

// floatToInt64 truncates, saturating instead of Go's undefined result
// for values out of range.
func floatToInt64(f float64) int64 {
	switch {
	case math.IsNaN(f):
		return 0
	case f >= math.MaxInt64:
		return math.MaxInt64
	case f <= math.MinInt64:
		return math.MinInt64
	}
	return int64(f)
}

// toInt is toInt64 clamped to int.
func toInt(v any) int {
	i := toInt64(v)
	return int(max(min(i, math.MaxInt), math.MinInt))
}

// toFloat64 converts like sprig: numbers, bools as 0/1, decimal strings;
// anything else is 0.
func toFloat64(v any) float64 {
	switch n := v.(type) {
	case nil:
		return 0
	case float64:
		return n
	case int:
		return float64(n)
	case string:
		f, err := strconv.ParseFloat(strings.TrimSpace(n), 64)
		if err != nil {
			return 0
		}
		return f
	case bool:
		if n {
			return 1
		}
		return 0
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return float64(rv.Int())
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return float64(rv.Uint())
	case reflect.Float32, reflect.Float64:
		return rv.Float()
	case reflect.String:
		return toFloat64(rv.String())
	}
	return 0
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
