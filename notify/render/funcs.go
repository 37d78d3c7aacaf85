package render

import (
	"fmt"
	"maps"
	"reflect"
	"text/template"
	"time"

	"github.com/Masterminds/sprig/v3"
)

// The function names live in one list, config.TemplateFuncNames: config
// checks templates against it at load and FuncMap implements exactly it
// (TestFuncNamesMatchFuncMap compares both ways).

// Limits on what one helper call may build, so a template cannot eat the
// memory from a small config value (`repeat`, `until`, `seq`, doubling a
// string or a list in a loop). MaxFieldSize bounds the printed output;
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

// sprigFuncs is sprig's text function map, the one Argo CD Notifications
// starts from; FuncMap takes only the hermetic helpers named in
// fromSprig, so env, expandenv, getHostByName, the random and crypto
// helpers are never reachable.
var sprigFuncs = sprig.TxtFuncMap()

// toInt, toInt64 and toFloat64 are sprig's own conversions (spf13/cast),
// so a number means the same to crowsnest's helpers as to sprig's.
var (
	toInt     = sprigFuncs["int"].(func(any) int)
	toInt64   = sprigFuncs["int64"].(func(any) int64)
	toFloat64 = sprigFuncs["float64"].(func(any) float64)
)

// FuncMap returns the template helpers bound to the clock now (nil means
// time.Now). The names are exactly config.TemplateFuncNames: sprig's
// functions as Argo CD Notifications has them, through one adapter
// (fromSprig), with checks where sprig's would build past a limit or
// change the Application data; and crowsnest's own, each with its reason
// and the test that shows it beside its name in stringFuncs, regexFuncs,
// listFuncs, dictFuncs, encodingFuncs and timeFuncs: sprig's cannot keep
// a limit, reads the process's clock or time zone, differs on purpose
// (docs/notifications.md lists how), or panics or quietly returns a zero
// value on bad input (a bad time zone, base64 or date) where these
// return an error that names the function.
func FuncMap(now func() time.Time) template.FuncMap {
	if now == nil {
		now = time.Now
	}
	m := template.FuncMap{}
	for name, use := range fromSprig {
		m[name] = use.adapt(name)
	}
	for _, part := range []template.FuncMap{
		stringFuncs(), regexFuncs(), listFuncs(), dictFuncs(), encodingFuncs(), timeFuncs(now), repoFuncs(),
	} {
		maps.Copy(m, part)
	}
	return m
}

// sprigUse is how FuncMap adapts one of sprig's functions.
type sprigUse struct {
	// from is sprig's name when it differs: the must- form, which returns
	// an error where the plain one panics or returns a zero value.
	from string
	// list is how arguments sprig reads as lists are checked.
	list listArg
	// check refuses arguments that would build a value over crowsnest's
	// limits, before sprig builds it; it may lower an argument (a count).
	check func(args []any) error
	// limit refuses a result over maxStringSize or maxListLen: the
	// helpers whose result can outgrow their arguments.
	limit bool
	// then converts the result (dict, pick, omit and fromJson give dicts
	// set may change; keys sorts).
	then func(any) any
}

// listArg says which interface{} arguments of a sprig function are lists:
// nil (a missing field) is then an empty list.
type listArg int

const (
	noList     listArg = iota
	firstList          // the first argument must be a list
	nilIsEmpty         // the first argument, when nil, is an empty list
)

// fromSprig are the helpers that are sprig's functions, and how each is
// adapted.
var fromSprig = map[string]sprigUse{
	// strings
	"upper": {}, "lower": {}, "trim": {}, "trimAll": {}, "trimPrefix": {}, "trimSuffix": {},
	"nospace": {}, "contains": {}, "hasPrefix": {}, "hasSuffix": {},
	"cat": {limit: true}, "quote": {limit: true}, "squote": {limit: true}, "join": {limit: true},
	"plural": {}, "toStrings": {},
	"sortAlpha": {list: nilIsEmpty},
	"repeat":    {check: checkRepeat},
	"replace":   {check: checkReplace},
	"indent":    {check: checkIndent("indent")},
	"nindent":   {check: checkIndent("nindent")},
	"split":     {check: checkSplit("split")},
	"splitList": {check: checkSplit("splitList")},
	// regular expressions (Go's RE2: linear time whatever the pattern)
	"regexMatch":     {from: "mustRegexMatch"},
	"regexFind":      {from: "mustRegexFind"},
	"regexFindAll":   {from: "mustRegexFindAll", check: capCount, limit: true},
	"regexSplit":     {from: "mustRegexSplit", check: capCount, limit: true},
	"regexQuoteMeta": {},
	// defaults and flow
	"default": {}, "empty": {}, "coalesce": {}, "ternary": {}, "fail": {},
	// lists
	"list": {}, "rest": {from: "mustRest", list: firstList}, "initial": {from: "mustInitial", list: firstList},
	"reverse": {from: "mustReverse", list: firstList},
	"compact": {from: "mustCompact", list: firstList},
	"until":   {check: checkUntil},
	// dicts
	"get": {}, "hasKey": {}, "pluck": {},
	"dict": {check: checkDictKeys, then: ownDict},
	"set":  {check: checkOwnDict("set"), then: ownDict}, "unset": {check: checkOwnDict("unset"), then: ownDict},
	"keys": {then: sortedStrings},
	"pick": {then: ownDict}, "omit": {then: ownDict},
	// numbers
	"add": {}, "add1": {}, "sub": {}, "mul": {}, "max": {}, "min": {}, "atoi": {},
	"int": {}, "int64": {}, "float64": {},
	"div": {check: nonZeroDivisor("div")},
	"mod": {check: nonZeroDivisor("mod")},
	// encoding
	"toJson":       {from: "mustToJson", limit: true},
	"toPrettyJson": {from: "mustToPrettyJson", limit: true},
	"toRawJson":    {from: "mustToRawJson", limit: true},
	"fromJson":     {from: "mustFromJson", check: blankIsNull, then: ownDicts},
	"b64enc":       {}, "sha256sum": {},
	// time
	"duration": {check: secondsAsInt64},
}

// adapt returns sprig's function as a func(...any) (any, error), which
// text/template and the render budget call directly. It converts each
// argument to the type sprig's parameter wants, leniently, as a missing
// field must render empty rather than fail: nil or a number is a string
// where one is wanted (toString), a number is read as sprig reads it, a
// truth value as text/template does, and any map with string keys is a
// dict.
func (u sprigUse) adapt(name string) func(...any) (any, error) {
	from := name
	if u.from != "" {
		from = u.from
	}
	fn := reflect.ValueOf(sprigFuncs[from])
	t := fn.Type()
	return func(args ...any) (any, error) {
		n := t.NumIn()
		if t.IsVariadic() && len(args) < n-1 || !t.IsVariadic() && len(args) != n {
			want := fmt.Sprint(n)
			if t.IsVariadic() {
				want = fmt.Sprintf("at least %d", n-1)
			}
			return nil, fmt.Errorf("wrong number of args for %s: want %s got %d", name, want, len(args))
		}
		if u.list != noList && len(args) > 0 {
			l, err := asList(name, args[0], u.list == nilIsEmpty)
			if err != nil {
				return nil, err
			}
			args[0] = l
		}
		if u.check != nil {
			if err := u.check(args); err != nil {
				return nil, err
			}
		}
		in := make([]reflect.Value, len(args))
		for i, a := range args {
			pt := t.In(min(i, n-1))
			if t.IsVariadic() && i >= n-1 {
				pt = pt.Elem()
			}
			v, err := convertArg(name, a, pt)
			if err != nil {
				return nil, err
			}
			in[i] = v
		}
		out := fn.Call(in)
		if len(out) == 2 && out[1].Type() == errorType && !out[1].IsNil() {
			return nil, out[1].Interface().(error)
		}
		r := out[0].Interface()
		if u.limit {
			if err := checkResult(name, out[0]); err != nil {
				return nil, err
			}
		}
		if u.then != nil {
			r = u.then(r)
		}
		return r, nil
	}
}

// convertArg converts a template value to sprig's parameter type t.
func convertArg(fn string, a any, t reflect.Type) (reflect.Value, error) {
	switch t.Kind() {
	case reflect.Interface:
		if a == nil {
			return reflect.Zero(t), nil
		}
		return reflect.ValueOf(a), nil
	case reflect.String:
		return reflect.ValueOf(toString(a)), nil
	case reflect.Int:
		return reflect.ValueOf(toInt(a)), nil
	case reflect.Bool:
		b, _ := template.IsTrue(a)
		return reflect.ValueOf(b), nil
	case reflect.Map:
		if t.Key().Kind() == reflect.String && t.Elem().Kind() == reflect.Interface {
			d, ok := entries(a)
			if !ok {
				return reflect.Value{}, fmt.Errorf("%s: want a dict, got %T", fn, a)
			}
			return reflect.ValueOf(d), nil
		}
	}
	if v := reflect.ValueOf(a); a != nil && v.Type().AssignableTo(t) {
		return v, nil
	}
	return reflect.Value{}, fmt.Errorf("%s: want a %s, got %T", fn, t, a)
}

// checkResult refuses a string over maxStringSize or a list or dict over
// maxListLen.
func checkResult(fn string, v reflect.Value) error {
	for v.Kind() == reflect.Interface && !v.IsNil() {
		v = v.Elem()
	}
	switch v.Kind() {
	case reflect.String:
		return checkSize(fn, v.Len())
	case reflect.Slice, reflect.Map:
		return checkLen(fn, v.Len())
	}
	return nil
}

// asList returns a as a list sprig takes: nil is an empty list; a value
// that is not a slice or an array is an error naming fn, or itself when
// orValue (sortAlpha sorts a single value as a list of one).
func asList(fn string, a any, orValue bool) (any, error) {
	if a == nil {
		return []any{}, nil
	}
	if isList(a) || orValue {
		return a, nil
	}
	return nil, fmt.Errorf("%s: want a list, got %T", fn, a)
}

// nonZeroDivisor refuses a divisor of 0, where sprig's div and mod
// panic.
func nonZeroDivisor(fn string) func([]any) error {
	return func(args []any) error {
		if toInt64(args[1]) == 0 {
			return fmt.Errorf("%s: division by zero", fn)
		}
		return nil
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

// toString is sprig's string conversion, except that nil (a missing
// field) is "" rather than "<nil>".
func toString(v any) string {
	switch s := v.(type) {
	case nil:
		return ""
	case string:
		return s
	case []byte:
		return string(s)
	case error:
		return s.Error()
	case fmt.Stringer:
		return s.String()
	}
	return fmt.Sprint(v)
}

func orEmpty(v any) any {
	if v == nil {
		return ""
	}
	return v
}

// required fails the render with msg when v is nil or an empty string, as
// Helm's required does (sprig has none).
func required(msg string, v any) (any, error) {
	if s, ok := v.(string); v == nil || ok && s == "" {
		return v, fmt.Errorf("%s", msg)
	}
	return v, nil
}
