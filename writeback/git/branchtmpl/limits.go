package branchtmpl

import (
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
	"text/template"
	"text/template/parse"
)

// A branch template comes from an Application's git-branch annotation,
// written by whoever may edit the Application, and text/template cannot
// be interrupted. So a branch template may range only over the data's
// lists (.Images, at most a few hundred entries), not inside another
// range, may not define or call templates, set variables (outside a range
// header) or call functions that build text (print, urlquery, ...:
// through a variable they double a string per call), only sha256, the
// builtins that compare or pick, and printf with a literal format whose
// widths and precisions are small (`{{.SHA256 | printf "%.8s"}}`); its
// output is capped.
// That keeps a render to microseconds whatever the template says, while
// argocd-image-updater's documented templates
// (`{{range .Images}}{{.Name}}-{{.NewTag}}{{end}}`, `{{.SHA256}}`) work.
const maxBranchBytes = 1024

// ErrOutsideLimits says a branch template does something a branch name
// never needs and a hostile one would use to burn CPU.
var ErrOutsideLimits = errors.New("branch template outside its limits")

// checkBranchTemplate applies the rules above to a parsed template.
func checkBranchTemplate(t *template.Template) error {
	if len(t.Templates()) > 1 {
		return fmt.Errorf("%w: define and block are not allowed", ErrOutsideLimits)
	}
	if t.Tree == nil || t.Root == nil {
		return nil
	}
	return checkBranchNode(t.Root, 0)
}

func checkBranchNode(n parse.Node, ranges int) error {
	switch n := n.(type) {
	case *parse.ListNode:
		if n == nil {
			return nil
		}
		for _, c := range n.Nodes {
			if err := checkBranchNode(c, ranges); err != nil {
				return err
			}
		}
	case *parse.TemplateNode:
		return fmt.Errorf("%w: {{template %q}}", ErrOutsideLimits, n.Name)
	case *parse.ActionNode:
		return checkBranchPipe(n.Pipe)
	case *parse.RangeNode:
		if ranges > 0 {
			return fmt.Errorf("%w: a range inside a range", ErrOutsideLimits)
		}
		if !rangesOverData(n.Pipe) {
			return fmt.Errorf("%w: range over %s; range only over the data's lists, such as .Images", ErrOutsideLimits, n.Pipe)
		}
		return checkBranchBranch(&n.BranchNode, ranges+1)
	case *parse.IfNode:
		if err := checkBranchPipe(n.Pipe); err != nil {
			return err
		}
		return checkBranchBranch(&n.BranchNode, ranges)
	case *parse.WithNode:
		if err := checkBranchPipe(n.Pipe); err != nil {
			return err
		}
		return checkBranchBranch(&n.BranchNode, ranges)
	}
	return nil
}

// branchFuncsAllowed are the functions a branch template may call: none
// of them builds a string longer than what it is given.
var branchFuncsAllowed = map[string]bool{
	"sha256": true, "len": true, "index": true, "slice": true,
	"eq": true, "ne": true, "lt": true, "le": true, "gt": true, "ge": true,
	"and": true, "or": true, "not": true,
}

// checkBranchPipe refuses variable declarations (a range header, checked
// by rangesOverData, is not a pipe of these) and assignments, and calls of
// functions not allowed.
func checkBranchPipe(p *parse.PipeNode) error {
	if p == nil {
		return nil
	}
	if p.IsAssign || len(p.Decl) > 0 {
		return fmt.Errorf("%w: setting a variable (%s)", ErrOutsideLimits, p)
	}
	for _, c := range p.Cmds {
		for i, a := range c.Args {
			switch a := a.(type) {
			case *parse.IdentifierNode:
				if a.Ident == "printf" && i == 0 {
					if err := checkBranchPrintf(c); err != nil {
						return err
					}
					continue
				}
				if !branchFuncsAllowed[a.Ident] {
					return fmt.Errorf("%w: function %s; a branch template may call sha256 and the builtins that compare or pick", ErrOutsideLimits, a.Ident)
				}
			case *parse.PipeNode:
				if err := checkBranchPipe(a); err != nil {
					return err
				}
			case *parse.ChainNode: // (pipeline).Field
				if pn, ok := a.Node.(*parse.PipeNode); ok {
					if err := checkBranchPipe(pn); err != nil {
						return err
					}
				}
			}
		}
	}
	return nil
}

func checkBranchBranch(b *parse.BranchNode, ranges int) error {
	if err := checkBranchNode(b.List, ranges); err != nil {
		return err
	}
	if b.ElseList != nil {
		return checkBranchNode(b.ElseList, ranges)
	}
	return nil
}

// maxBranchWidth bounds a printf width or precision in a branch
// template: enough to pad or cut a hash, too little to build megabytes.
const maxBranchWidth = 64

var printfNumber = regexp.MustCompile(`%[-+# 0]*(\d*)(?:\.(\d*))?`)

// checkBranchPrintf allows printf with a literal format (first argument)
// whose widths and precisions are at most maxBranchWidth, without '*'.
func checkBranchPrintf(c *parse.CommandNode) error {
	if len(c.Args) < 2 {
		return fmt.Errorf("%w: printf without a format", ErrOutsideLimits)
	}
	format, ok := c.Args[1].(*parse.StringNode)
	if !ok || strings.Contains(format.Text, "*") {
		return fmt.Errorf("%w: printf takes a literal format without '*' here", ErrOutsideLimits)
	}
	for _, m := range printfNumber.FindAllStringSubmatch(format.Text, -1) {
		for _, n := range m[1:] {
			if v, err := strconv.Atoi(n); n != "" && (err != nil || v > maxBranchWidth) {
				return fmt.Errorf("%w: printf width or precision %s is over %d", ErrOutsideLimits, n, maxBranchWidth)
			}
		}
	}
	return nil
}

// rangesOverData reports whether a range's pipeline (whose header may
// declare its variables) is a field of the
// data (.Images, $.Images, $x.Images): never a number, a function's
// result or a variable set to one.
func rangesOverData(p *parse.PipeNode) bool {
	if p == nil || p.IsAssign || len(p.Cmds) != 1 || len(p.Cmds[0].Args) != 1 {
		return false
	}
	switch a := p.Cmds[0].Args[0].(type) {
	case *parse.FieldNode:
		return true
	case *parse.VariableNode:
		return len(a.Ident) > 1 // $.Images, $x.Images; not a bare $x
	}
	return false
}

// cappedWriter fails a render whose output passes max bytes.
type cappedWriter struct {
	w   io.Writer
	max int
}

func (c *cappedWriter) Write(p []byte) (int, error) {
	if len(p) > c.max {
		return 0, fmt.Errorf("%w: a branch name longer than %d bytes", ErrOutsideLimits, maxBranchBytes)
	}
	c.max -= len(p)
	return c.w.Write(p)
}
