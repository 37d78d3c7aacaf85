package triggers

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/file"
	"github.com/expr-lang/expr/vm"

	"github.com/crowsnest-dev/crowsnest/config"
)

// Trigger is a compiled trigger.
type Trigger struct {
	Name       string
	Conditions []Condition
	// OnEvent is set when a condition reads `event`: the trigger is about
	// crowsnest's own events and is evaluated on those, not on every
	// Application update.
	OnEvent bool
}

// Condition is one compiled condition.
type Condition struct {
	config.Condition
	// ID identifies the condition for dedupe: a hash of its when and
	// oncePer text, so it survives edits of send lists, templates,
	// descriptions, other conditions and other triggers.
	ID      string
	when    *vm.Program
	oncePer *vm.Program
}

// Set is a compiled notifications config: the triggers, with the catalog
// merged under the configured entries when it is on.
type Set struct {
	Triggers map[string]*Trigger
	// Config is the merged model (catalog included): templates, services
	// and subscriptions for package notify.
	Config config.Notifications
}

// CompileError is a condition that does not compile.
type CompileError struct {
	Trigger   string
	Condition int
	// Field is "when", "oncePer" or "send".
	Field string
	// Line and Column locate the problem in the expression (1-based;
	// 0 when not about one position).
	Line, Column int
	Msg          string
	// Snippet shows the expression with a caret under the position.
	Snippet string
}

func (e *CompileError) Error() string {
	s := fmt.Sprintf("trigger %s[%d].%s: ", e.Trigger, e.Condition, e.Field)
	if e.Line > 0 {
		s += fmt.Sprintf("line %d, column %d: ", e.Line, e.Column)
	}
	return s + e.Msg + e.Snippet
}

// exprOptions are shared by every condition: a typed environment (a typo
// in a variable is a compile error), nil-safe member access, and the
// functions that keep an evaluation within its budget (limits.go).
func exprOptions() []expr.Option {
	return append([]expr.Option{expr.Env(&Env{}), expr.Patch(nilSafe{})}, limitFuncs()...)
}

// nilSafe makes every member access optional (as if written with ?.), so
// app.status.operationState.phase is nil when operationState is missing
// instead of a runtime error, as Argo CD users expect of their triggers.
type nilSafe struct{}

func (nilSafe) Visit(node *ast.Node) { //nolint:gocritic // ast.Visitor's signature
	if m, ok := (*node).(*ast.MemberNode); ok && !m.Optional {
		m.Optional = true
		ast.Patch(node, &ast.ChainNode{Node: m})
	}
}

// readsEvent finds the identifier `event`.
type readsEvent struct{ found bool }

func (r *readsEvent) Visit(node *ast.Node) { //nolint:gocritic // ast.Visitor's signature
	if id, ok := (*node).(*ast.IdentifierNode); ok && id.Value == "event" {
		r.found = true
	}
}

// CompileTrigger compiles one trigger's conditions. The error joins a
// *CompileError per broken expression.
func CompileTrigger(name string, conds []config.Condition) (*Trigger, error) {
	t := &Trigger{Name: name, Conditions: make([]Condition, len(conds))}
	var errs []error
	for i, c := range conds {
		cc := Condition{Condition: c, ID: ConditionID(c.When, c.OncePer)}
		var err error
		ev := &readsEvent{}
		if cc.when, err = compileExpr(c.When, ev); err != nil {
			errs = append(errs, compileError(name, i, "when", err))
		}
		if strings.TrimSpace(c.OncePer) != "" {
			if cc.oncePer, err = compileExpr(c.OncePer, ev); err != nil {
				errs = append(errs, compileError(name, i, "oncePer", err))
			}
		}
		t.OnEvent = t.OnEvent || ev.found
		t.Conditions[i] = cc
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return t, nil
}

func compileExpr(src string, ev *readsEvent) (*vm.Program, error) {
	if strings.TrimSpace(src) == "" {
		return nil, errors.New("empty expression")
	}
	return expr.Compile(src, append(exprOptions(), expr.Patch(ev), expr.Patch(&limits{}))...)
}

func compileError(trigger string, i int, field string, err error) *CompileError {
	ce := &CompileError{Trigger: trigger, Condition: i, Field: field, Msg: err.Error()}
	var fe *file.Error
	if errors.As(err, &fe) {
		ce.Line, ce.Column, ce.Msg, ce.Snippet = fe.Line, fe.Column+1, fe.Message, fe.Snippet
	}
	return ce
}

// ConditionID is a condition's identity: a short hash of its when and
// oncePer expressions (surrounding space ignored).
func ConditionID(when, oncePer string) string {
	return shortHash(strings.TrimSpace(when), strings.TrimSpace(oncePer))
}

// shortHash is the first 8 bytes of the SHA-256 of parts, each ended by a
// NUL, in hex: 16 characters.
func shortHash(parts ...string) string {
	var buf [512]byte
	b := buf[:0]
	for _, p := range parts {
		b = append(b, p...)
		b = append(b, 0)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:8])
}

// Compile compiles every trigger of n (with the catalog under it when
// n.Catalog is set) and checks references between them: templates named
// by send, triggers named by subscriptions and default triggers. The
// error joins every problem, each naming the trigger, condition and
// position.
func Compile(n *config.Notifications) (*Set, error) {
	merged := *n
	if n.Catalog {
		cat, err := Catalog()
		if err != nil {
			return nil, err
		}
		merged.Merge(cat)
	}
	s := &Set{Triggers: make(map[string]*Trigger, len(merged.Triggers)), Config: merged}
	var errs []error
	for _, name := range sortedNames(merged.Triggers) {
		conds := merged.Triggers[name]
		t, err := CompileTrigger(name, conds)
		if err != nil {
			errs = append(errs, err)
		} else {
			s.Triggers[name] = t
		}
		for i, c := range conds {
			for _, tmpl := range c.Send {
				if _, ok := merged.Templates[tmpl]; !ok {
					errs = append(errs, &CompileError{Trigger: name, Condition: i, Field: "send",
						Msg: fmt.Sprintf("unknown template %q", tmpl)})
				}
			}
		}
	}
	checkTriggerRefs := func(where string, names []string) {
		for _, tr := range names {
			if _, ok := merged.Triggers[tr]; !ok {
				errs = append(errs, fmt.Errorf("%s: unknown trigger %q", where, tr))
			}
		}
	}
	checkTriggerRefs("defaultTriggers", merged.DefaultTriggers)
	for _, svc := range sortedNames(merged.ServiceDefaultTriggers) {
		checkTriggerRefs("defaultTriggers."+svc, merged.ServiceDefaultTriggers[svc])
	}
	for i, sub := range merged.Subscriptions {
		checkTriggerRefs(fmt.Sprintf("subscriptions[%d].triggers", i), sub.Triggers)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return s, nil
}

func sortedNames[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
