package triggers

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"unicode/utf8"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/ast"

	"github.com/crowsnest-dev/crowsnest/internal/valuesize"
	"github.com/crowsnest-dev/crowsnest/internal/workbudget"
)

// A condition's author is not trusted, and expr's own limits leave gaps:
// its compile-time cap on expression size (conf.DefaultMaxNodes, 10,000
// nodes) and the VM's memory budget (conf.DefaultMemoryBudget, a million,
// charged by ranges, array and map literals and a few builtins) apply, but
// a loop over data charges nothing (three nested all() over a 3,000-entry
// list run 27 billion times) and neither does `+`, so `let b = a + a` forty
// times over builds 2^40 bytes. So every evaluation has a budget of its
// own, and compileExpr rewrites the expression to charge it:
//
//   - every closure (the body of all, any, map, filter, reduce, ...) is
//     preceded by crowsnestStep($env), one step each time it runs;
//   - every string, list or map an expression builds (with +, a builtin,
//     a function or a literal that is not constant) goes through
//     crowsnestCheck($env, value), which refuses one that would print to
//     more than maxValueSize, walking each shared part once, and charges
//     its size;
//   - join and replace, whose result can be much larger than their input,
//     and the strings namespace's Join, Replace and ReplaceAll work out the
//     size first and refuse it before building it.
//
// The limits are counts, not a deadline: a condition fires or fails the
// same way on a loaded node and an idle one.
const (
	// maxEvalSteps caps closure runs in one evaluation. Conditions over an
	// Application's resources run a closure per resource (thousands at
	// most); at a few hundred nanoseconds a step the cap is tens of
	// milliseconds.
	maxEvalSteps = 100_000
	// maxEvalBytes caps the bytes of the values one evaluation builds
	// (strings, and the printed size of lists and maps), and so the memory
	// it can hold and the time spent copying.
	maxEvalBytes = 32 << 20
	// maxValueSize caps one value an expression builds: above the
	// apiserver's 1.5 MB object limit, so whatever is taken from one
	// Application fits.
	maxValueSize = 2 << 20
)

// ErrEvalBudget is returned when an evaluation exceeds maxEvalSteps or
// maxEvalBytes, or would build a value over maxValueSize.
var ErrEvalBudget = errors.New("condition evaluation budget exceeded")

// evalLimits are one evaluation's allowance.
var evalLimits = &workbudget.Limits{
	Steps:    maxEvalSteps,
	Bytes:    maxEvalBytes,
	StepsErr: fmt.Errorf("%w: more than %d closure runs", ErrEvalBudget, maxEvalSteps),
	BytesErr: fmt.Errorf("%w: built more than %d MiB of values", ErrEvalBudget, maxEvalBytes>>20),
}

// The functions the rewrite calls. Their names are no secret: a condition
// calling them itself only spends its own budget.
const (
	stepFunc  = "crowsnestStep"
	checkFunc = "crowsnestCheck"
)

// limitFuncs are the functions the rewritten expressions call, and the
// size-checked join and replace in place of expr's builtins.
func limitFuncs() []expr.Option {
	return []expr.Option{
		expr.Function(stepFunc, func(params ...any) (any, error) {
			if env, ok := params[0].(*Env); ok {
				return true, env.budget.Charge(1, 0)
			}
			return true, nil
		}, new(func(any) bool)),
		expr.Function(checkFunc, checkValue, new(func(any, any) bool)),
		expr.Function("join", join,
			new(func([]any, string) string), new(func([]any) string),
			new(func([]string, string) string), new(func([]string) string)),
		expr.Function("replace", replace,
			new(func(string, string, string) string), new(func(string, string, string, int) string)),
	}
}

// checkValue refuses a value that would print to more than maxValueSize
// and charges its size to the evaluation.
func checkValue(params ...any) (any, error) {
	env, ok := params[0].(*Env)
	if !ok {
		return true, nil
	}
	size, work := 0, 1
	if s, ok := params[1].(string); ok {
		size = len(s)
	} else {
		size, work = valuesize.Printed(reflect.ValueOf(params[1]), maxValueSize)
	}
	if size > maxValueSize {
		return false, fmt.Errorf("%w: a string, list or map of more than %d MiB", ErrEvalBudget, maxValueSize>>20)
	}
	return true, env.budget.Charge(0, size+work)
}

// join is expr's join, refusing a result over maxValueSize before it is
// built.
func join(args ...any) (any, error) {
	glue := ""
	if len(args) == 2 {
		glue, _ = args[1].(string)
	}
	var parts []string
	switch l := args[0].(type) {
	case []string:
		parts = l
	case []any:
		parts = make([]string, len(l))
		for i, p := range l {
			s, ok := p.(string)
			if !ok {
				return nil, fmt.Errorf("join: element %d is a %T, not a string", i, p)
			}
			parts[i] = s
		}
	default:
		return nil, fmt.Errorf("invalid argument for join (type %T)", args[0])
	}
	s, err := joinChecked(parts, glue)
	if err != nil {
		return nil, err
	}
	return s, nil
}

// replace is expr's replace (all, or the first n), refusing a result over
// maxValueSize before it is built.
func replace(args ...any) (any, error) {
	if len(args) < 3 || len(args) > 4 {
		return nil, fmt.Errorf("invalid number of arguments for replace (expected 3 or 4, got %d)", len(args))
	}
	s, _ := args[0].(string)
	old, _ := args[1].(string)
	repl, _ := args[2].(string)
	n := -1
	if len(args) == 4 {
		n, _ = args[3].(int)
	}
	r, err := replaceChecked(s, old, repl, n)
	if err != nil {
		return nil, err
	}
	return r, nil
}

// joinChecked is strings.Join within maxValueSize.
func joinChecked(parts []string, sep string) (string, error) {
	size := len(sep) * max(len(parts)-1, 0)
	for _, p := range parts {
		size += len(p)
	}
	if size > maxValueSize {
		return "", fmt.Errorf("%w: join: a result of %d bytes, more than %d MiB", ErrEvalBudget, size, maxValueSize>>20)
	}
	return strings.Join(parts, sep), nil
}

// replaceChecked is strings.Replace within maxValueSize: an empty old
// matches before every character, so a long repl multiplies the length.
func replaceChecked(s, old, repl string, n int) (string, error) {
	if len(repl) > len(old) {
		count := utf8.RuneCountInString(s) + 1
		if old != "" {
			count = strings.Count(s, old)
		}
		if n >= 0 {
			count = min(count, n)
		}
		if size := len(s) + count*(len(repl)-len(old)); size > maxValueSize {
			return "", fmt.Errorf("%w: replace: a result of %d bytes, more than %d MiB", ErrEvalBudget, size, maxValueSize>>20)
		}
	}
	return strings.Replace(s, old, repl, n), nil
}

// limits is the expr.Patch visitor that puts the calls in. It runs after
// the type check, so it leaves alone what can only be a number, a bool or
// a time, and literals that hold only constants.
type limits struct{ vars int }

func (l *limits) Visit(node *ast.Node) { //nolint:gocritic // ast.Visitor's signature
	switch n := (*node).(type) {
	case *ast.PredicateNode:
		n.Node = &ast.ConditionalNode{Ternary: true, Cond: call(n, stepFunc), Exp1: n.Node, Exp2: at(&ast.NilNode{}, n)}
	case *ast.ArrayNode:
		if !constant(n.Nodes...) {
			l.check(node)
		}
	case *ast.MapNode:
		if !constant(n.Pairs...) {
			l.check(node)
		}
	case *ast.BinaryNode:
		if n.Operator == "+" && grows(n.Type()) {
			l.check(node)
		}
	case *ast.BuiltinNode:
		if grows(n.Type()) {
			l.check(node)
		}
	case *ast.CallNode:
		if id, ok := n.Callee.(*ast.IdentifierNode); ok && (id.Value == stepFunc || id.Value == checkFunc) {
			return
		}
		if grows(n.Type()) {
			l.check(node)
		}
	}
}

// check replaces the node X with `let v = X; crowsnestCheck($env, v) ? v
// : nil`, which has X's type and evaluates it once.
func (l *limits) check(node *ast.Node) { //nolint:gocritic // ast.Patch replaces the node through the pointer
	orig := *node
	l.vars++
	name := fmt.Sprintf("crowsnestValue%d", l.vars)
	ref := func() ast.Node { return at(&ast.IdentifierNode{Value: name}, orig) }
	cond := call(orig, checkFunc, ref())
	ast.Patch(node, &ast.VariableDeclaratorNode{Name: name, Value: orig,
		Expr: at(&ast.ConditionalNode{Ternary: true, Cond: cond, Exp1: ref(), Exp2: at(&ast.NilNode{}, orig)}, orig)})
}

// call is `fn($env, args...)` at n's place in the source.
func call(n ast.Node, fn string, args ...ast.Node) ast.Node {
	return at(&ast.CallNode{
		Callee:    at(&ast.IdentifierNode{Value: fn}, n),
		Arguments: append([]ast.Node{at(&ast.IdentifierNode{Value: "$env"}, n)}, args...),
	}, n)
}

// at gives node n's location, so an error in it points at the source.
func at(node, n ast.Node) ast.Node {
	node.SetLocation(n.Location())
	return node
}

// grows reports whether a value of type t can be large: a string, list or
// map, or a type the checker does not know.
func grows(t reflect.Type) bool {
	if t == nil {
		return true
	}
	switch t.Kind() {
	case reflect.String, reflect.Slice, reflect.Array, reflect.Map, reflect.Interface:
		return true
	}
	return false
}

// constant reports whether nodes are literals (a list or map of them is
// as large as its source text).
func constant(nodes ...ast.Node) bool {
	for _, n := range nodes {
		switch n := n.(type) {
		case *ast.NilNode, *ast.IntegerNode, *ast.FloatNode, *ast.BoolNode, *ast.StringNode, *ast.ConstantNode:
		case *ast.PairNode:
			if !constant(n.Key, n.Value) {
				return false
			}
		case *ast.ArrayNode:
			if !constant(n.Nodes...) {
				return false
			}
		case *ast.MapNode:
			if !constant(n.Pairs...) {
				return false
			}
		default:
			return false
		}
	}
	return true
}
