package git

import (
	"errors"
	"fmt"
	"io"
	"text/template"
	"text/template/parse"
)

// A branch template comes from an Application's git-branch annotation,
// written by whoever may edit the Application, and text/template cannot
// be interrupted. So a branch template may range only over the data's
// lists (.Images, at most a few hundred entries), not inside another
// range, and may not define or call templates; its output is capped.
// That keeps a render to microseconds whatever the template says, while
// argocd-image-updater's documented templates
// (`{{range .Images}}{{.Name}}-{{.NewTag}}{{end}}`, `{{.SHA256}}`) work.
const maxBranchBytes = 1024

// ErrBranchTemplate says a branch template does something a branch name
// never needs and a hostile one would use to burn CPU.
var ErrBranchTemplate = errors.New("branch template outside its limits")

// checkBranchTemplate applies the rules above to a parsed template.
func checkBranchTemplate(t *template.Template) error {
	if len(t.Templates()) > 1 {
		return fmt.Errorf("%w: define and block are not allowed", ErrBranchTemplate)
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
		return fmt.Errorf("%w: {{template %q}}", ErrBranchTemplate, n.Name)
	case *parse.RangeNode:
		if ranges > 0 {
			return fmt.Errorf("%w: a range inside a range", ErrBranchTemplate)
		}
		if !rangesOverData(n.Pipe) {
			return fmt.Errorf("%w: range over %s; range only over the data's lists, such as .Images", ErrBranchTemplate, n.Pipe)
		}
		return checkBranchBranch(&n.BranchNode, ranges+1)
	case *parse.IfNode:
		return checkBranchBranch(&n.BranchNode, ranges)
	case *parse.WithNode:
		return checkBranchBranch(&n.BranchNode, ranges)
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

// rangesOverData reports whether a range's pipeline is a field of the
// data (.Images, $.Images, $x.Images): never a number, a function's
// result or a variable set to one.
func rangesOverData(p *parse.PipeNode) bool {
	if p == nil || len(p.Cmds) != 1 || len(p.Cmds[0].Args) != 1 {
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
		return 0, fmt.Errorf("%w: a branch name longer than %d bytes", ErrBranchTemplate, maxBranchBytes)
	}
	c.max -= len(p)
	return c.w.Write(p)
}
