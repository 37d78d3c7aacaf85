package render

import (
	"errors"
	"fmt"
	"reflect"
	"text/template"

	"github.com/crowsnest-dev/crowsnest/internal/valuesize"
	"github.com/crowsnest-dev/crowsnest/internal/workbudget"
)

// A template's author is not trusted, and text/template cannot be
// interrupted: a render stops only when a function it calls returns an
// error. So every Render carries a budget that the functions charge, and
// Compile makes sure they are called often enough to notice:
//
//   - every helper runs through a wrapper that charges one step, and the
//     bytes of the strings and the elements of the lists and dicts it takes
//     and returns;
//   - Compile puts a renderStep call first in every range body and every
//     defined template, so `{{range 1000000000}}{{end}}`, nested ranges and
//     template calls that fan out cost a step each time round;
//   - a template that calls itself, directly or not, does not compile;
//   - a helper that prints or encodes its argument (all but those in
//     argUses) first checks the size it would print, walking each shared
//     part once, so a value doubled forty times by `list $l $l` fails in
//     forty steps instead of printing 2^40 elements.
//
// The limits are counts, not a deadline, so a template renders or fails
// the same way on a loaded node and an idle one; the tests and
// BenchmarkRenderBudget keep the worst case within a fraction of a second
// of CPU and tens of MiB.
const (
	// maxRenderSteps caps helper calls, range iterations and template calls
	// in one Render, all fields together. A template listing 5,000
	// resources with a few helpers each uses a quarter of it
	// (TestBudgetUseOfARealTemplate); a step costs a microsecond or two, so
	// the cap is under half a second.
	maxRenderSteps = 200_000
	// maxRenderBytes caps what helpers take and return in one Render: the
	// bytes of strings and 16 per element of a list or dict they return (a
	// rough cost of building it), one per element they are given or look
	// through. 32 MiB is over a hundred times a rendered field
	// (MaxFieldSize), so real templates never come near it, and bounds
	// the memory a template can build and the bytes a regular expression
	// or a search can be made to scan.
	maxRenderBytes = 32 << 20
	// renderStep is the name of the function Compile calls to charge a
	// step; it is not in config.TemplateFuncNames, so a configured template
	// cannot call it.
	renderStep = "renderStep"
)

// ErrBudget is returned when a render exceeds maxRenderSteps or
// maxRenderBytes.
var ErrBudget = errors.New("template render budget exceeded")

// argUse is how a helper reads a list or dict it is given, which decides
// what the argument costs.
type argUse int

const (
	// printsArg: the helper prints, encodes or compares it deeply, so it
	// first checks the size it would print and pays for it. The default,
	// for any helper added later too.
	printsArg argUse = iota //nolint:unused // the zero value: argUses lists the other helpers
	// scansArg: the helper compares it element by element (has, without,
	// uniq), one per element.
	scansArg
	// keepsArg: the helper looks a few things up in it, passes it on or
	// copies it into its result (which pays for the copy): free, so a
	// whole Application or a dict being built can go through it.
	keepsArg
)

// argUses are the helpers that do not print their arguments.
var argUses = map[string]argUse{
	"has": scansArg, "without": scansArg, "uniq": scansArg,

	"default": keepsArg, "empty": keepsArg, "coalesce": keepsArg, "ternary": keepsArg, "required": keepsArg,
	"first": keepsArg, "last": keepsArg, "rest": keepsArg, "initial": keepsArg, "append": keepsArg,
	"prepend": keepsArg, "concat": keepsArg, "reverse": keepsArg, "compact": keepsArg, "list": keepsArg,
	"until": keepsArg, "untilStep": keepsArg, "seq": keepsArg, "plural": keepsArg,
	"dict": keepsArg, "get": keepsArg, "set": keepsArg, "unset": keepsArg, "hasKey": keepsArg,
	"keys": keepsArg, "values": keepsArg, "pluck": keepsArg, "pick": keepsArg, "omit": keepsArg, "dig": keepsArg,
	"add": keepsArg, "add1": keepsArg, "sub": keepsArg, "mul": keepsArg, "div": keepsArg, "mod": keepsArg,
	"max": keepsArg, "min": keepsArg, "int": keepsArg, "int64": keepsArg, "float64": keepsArg,
	"now": keepsArg, "date": keepsArg, "dateInZone": keepsArg, "dateRFC3339": keepsArg, "unixEpoch": keepsArg,
	"ago": keepsArg, "duration": keepsArg, "durationRound": keepsArg,
}

// partOfInput are the helpers whose result is one of their arguments or
// a part of one (set returns the dict it changed), not something they
// built: it costs nothing more.
var partOfInput = map[string]bool{
	"default": true, "coalesce": true, "ternary": true, "required": true, "orEmpty": true,
	"first": true, "last": true, "get": true, "set": true, "unset": true, "dig": true,
}

// renderLimits are one Render's allowance.
var renderLimits = &workbudget.Limits{
	Steps:    maxRenderSteps,
	Bytes:    maxRenderBytes,
	StepsErr: fmt.Errorf("%w: more than %d steps (helper calls, range iterations and template calls)", ErrBudget, maxRenderSteps),
	BytesErr: fmt.Errorf("%w: helpers took and returned more than %d MiB", ErrBudget, maxRenderBytes>>20),
}

// budget is what is left of one Render's limits.
type budget struct{ workbudget.Budget }

func newBudget() *budget {
	b := &budget{}
	b.reset()
	return b
}

// reset gives b the whole budget, for the next render.
func (b *budget) reset() { b.Reset(renderLimits) }

// funcs returns the helpers of base that names lists, each wrapped to
// charge b, plus renderStep.
func (b *budget) funcs(base template.FuncMap, names []string) template.FuncMap {
	m := make(template.FuncMap, len(names)+1)
	for _, name := range names {
		if fn, ok := base[name]; ok && name != renderStep {
			m[name] = b.wrap(name, reflect.ValueOf(fn))
		}
	}
	m[renderStep] = func() (string, error) { return "", b.Charge(1, 0) }
	return m
}

var errorType = reflect.TypeFor[error]()

// wrap returns fn as a function of the same arguments that charges b
// before and after the call and returns an error beside its result (text/
// template accepts either form). A helper that prints its arguments first
// refuses one that would print to more than maxStringSize. The shapes
// most calls have (dig, orEmpty, the string helpers) are wrapped directly;
// the rest through reflection, at twice the cost of a call.
func (b *budget) wrap(name string, fn reflect.Value) any {
	c := wrapped{b: b, name: name, use: argUses[name], keep: partOfInput[name]}
	switch f := fn.Interface().(type) {
	case func(...any) (any, error):
		return func(args ...any) (any, error) {
			if err := c.before(args...); err != nil {
				return nil, err
			}
			r, err := f(args...)
			if err != nil {
				return nil, err
			}
			return r, c.after(reflect.ValueOf(r))
		}
	case func(any) any:
		return func(v any) (any, error) {
			if err := c.before(v); err != nil {
				return nil, err
			}
			r := f(v)
			return r, c.after(reflect.ValueOf(r))
		}
	case func(any) string:
		return func(v any) (string, error) {
			if err := c.before(v); err != nil {
				return "", err
			}
			r := f(v)
			return r, c.after(reflect.ValueOf(r))
		}
	}
	t := fn.Type()
	in := make([]reflect.Type, t.NumIn())
	for i := range in {
		in[i] = t.In(i)
	}
	out := t.Out(0)
	w := reflect.FuncOf(in, []reflect.Type{out, errorType}, t.IsVariadic())
	return reflect.MakeFunc(w, func(args []reflect.Value) []reflect.Value {
		fail := func(err error) []reflect.Value {
			return []reflect.Value{reflect.Zero(out), reflect.ValueOf(&err).Elem()}
		}
		var argv []any
		for i, a := range args {
			if t.IsVariadic() && i == len(args)-1 {
				for j := range a.Len() {
					argv = append(argv, a.Index(j).Interface())
				}
				continue
			}
			argv = append(argv, a.Interface())
		}
		if err := c.before(argv...); err != nil {
			return fail(err)
		}
		var res []reflect.Value
		if t.IsVariadic() {
			res = fn.CallSlice(args)
		} else {
			res = fn.Call(args)
		}
		if len(res) == 2 && !res[1].IsNil() {
			return res
		}
		if err := c.after(res[0]); err != nil {
			return fail(err)
		}
		return []reflect.Value{res[0], reflect.Zero(errorType)}
	}).Interface()
}

// wrapped is one helper's charging: before the call for its arguments,
// after it for what it built.
type wrapped struct {
	b    *budget
	name string
	use  argUse
	keep bool // partOfInput
}

func (c wrapped) before(args ...any) error {
	cost := 0
	for i, a := range args {
		n, err := argCost(c.name, i, a, c.use)
		if err != nil {
			return err
		}
		cost += n
	}
	return c.b.Charge(1, cost)
}

func (c wrapped) after(result reflect.Value) error {
	if c.keep {
		return nil
	}
	return c.b.Charge(0, resultCost(result))
}

// argCost is what reading one argument costs a helper that uses it so:
// nothing when it keeps it; otherwise a string's bytes, a list's or
// dict's elements when it scans it, and when it prints it, the bytes it
// prints and the values walked to make sure they are within
// maxStringSize.
func argCost(fn string, i int, a any, use argUse) (int, error) {
	if use == keepsArg || a == nil {
		return 0, nil
	}
	if s, ok := a.(string); ok {
		return len(s), nil
	}
	v := reflect.ValueOf(a)
	switch v.Kind() {
	case reflect.String:
		return v.Len(), nil
	case reflect.Slice, reflect.Array, reflect.Map:
		if use == scansArg {
			return v.Len(), nil
		}
	case reflect.Struct, reflect.Pointer:
		if use == scansArg {
			return 0, nil
		}
	default:
		return 0, nil
	}
	size, work := valuesize.Printed(v, maxStringSize)
	switch {
	case size <= maxStringSize:
	case fn == "orEmpty": // what Compile ends a printed pipeline with
		return 0, fmt.Errorf("the value would print to more than %d bytes", maxStringSize)
	default:
		return 0, fmt.Errorf("%s: argument %d would print to more than %d bytes", fn, i+1, maxStringSize)
	}
	return size + work, nil
}

// resultCost is what a helper's result costs to build: its bytes, or 16
// per element of a list or dict.
func resultCost(v reflect.Value) int {
	for v.Kind() == reflect.Interface && !v.IsNil() {
		v = v.Elem()
	}
	switch v.Kind() {
	case reflect.String:
		return v.Len()
	case reflect.Slice, reflect.Array, reflect.Map:
		return 16 * v.Len()
	}
	return 0
}
