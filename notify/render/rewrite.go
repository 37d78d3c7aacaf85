package render

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"text/template/parse"
)

// rewriteTree makes field chains total: `.a.b.c` and `$x.a.b` become
// `dig . "a" "b" "c"` and `dig $x "a" "b"`, so a missing intermediate
// gives nil instead of "nil pointer evaluating interface {}.b", and every
// printed pipeline ends in orEmpty, so nil prints as "" rather than
// "<no value>". Method calls with arguments are left alone. The template
// and every range body start with a renderStep call (see budget.go).
func rewriteTree(t *parse.Tree) {
	rewriteNode(t, t.Root)
	t.Root.Nodes = append([]parse.Node{stepAction(t, t.Root.Pos)}, t.Root.Nodes...)
}

// stepAction is `{{renderStep}}`, which prints nothing.
func stepAction(t *parse.Tree, pos parse.Pos) *parse.ActionNode {
	return &parse.ActionNode{NodeType: parse.NodeAction, Pos: pos, Pipe: &parse.PipeNode{
		NodeType: parse.NodePipe, Pos: pos,
		Cmds: []*parse.CommandNode{{NodeType: parse.NodeCommand, Pos: pos, Args: []parse.Node{ident(t, renderStep, pos)}}},
	}}
}

func rewriteNode(t *parse.Tree, n parse.Node) {
	switch n := n.(type) {
	case *parse.ListNode:
		if n == nil {
			return
		}
		for _, c := range n.Nodes {
			rewriteNode(t, c)
		}
	case *parse.ActionNode:
		rewritePipe(t, n.Pipe, true)
	case *parse.IfNode:
		rewriteBranch(t, &n.BranchNode)
	case *parse.RangeNode:
		rewriteBranch(t, &n.BranchNode)
		if n.List == nil {
			n.List = &parse.ListNode{NodeType: parse.NodeList, Pos: n.Pos}
		}
		n.List.Nodes = append([]parse.Node{stepAction(t, n.Pos)}, n.List.Nodes...)
	case *parse.WithNode:
		rewriteBranch(t, &n.BranchNode)
	case *parse.TemplateNode:
		rewritePipe(t, n.Pipe, false)
	}
}

func rewriteBranch(t *parse.Tree, b *parse.BranchNode) {
	rewritePipe(t, b.Pipe, false)
	rewriteNode(t, b.List)
	rewriteNode(t, b.ElseList)
}

func rewritePipe(t *parse.Tree, p *parse.PipeNode, printed bool) {
	if p == nil {
		return
	}
	for i, c := range p.Cmds {
		rewriteCmd(t, c, i == 0)
	}
	if printed && len(p.Decl) == 0 && len(p.Cmds) > 0 {
		p.Cmds = append(p.Cmds, &parse.CommandNode{
			NodeType: parse.NodeCommand, Pos: p.Pos,
			Args: []parse.Node{ident(t, "orEmpty", p.Pos)},
		})
	}
}

func rewriteCmd(t *parse.Tree, c *parse.CommandNode, firstInPipe bool) {
	if len(c.Args) == 0 {
		return
	}
	start := 0
	if args := digArgs(t, c.Args[0]); args != nil {
		switch {
		case len(c.Args) == 1 && firstInPipe:
			c.Args = args
			return
		default:
			start = 1 // a method call or a function fed by the pipeline
		}
	}
	for i := start; i < len(c.Args); i++ {
		switch a := c.Args[i].(type) {
		case *parse.PipeNode:
			rewritePipe(t, a, false)
		case *parse.ChainNode:
			if p, ok := a.Node.(*parse.PipeNode); ok {
				rewritePipe(t, p, false)
			}
		default:
			if i == 0 {
				continue
			}
			if args := digArgs(t, a); args != nil {
				c.Args[i] = &parse.PipeNode{NodeType: parse.NodePipe, Pos: a.Position(), Cmds: []*parse.CommandNode{
					{NodeType: parse.NodeCommand, Pos: a.Position(), Args: args},
				}}
			}
		}
	}
}

// digArgs returns the arguments of the dig call that replaces a field
// chain, or nil when n is not one.
func digArgs(t *parse.Tree, n parse.Node) []parse.Node {
	var base parse.Node
	var path []string
	switch f := n.(type) {
	case *parse.FieldNode:
		base, path = &parse.DotNode{NodeType: parse.NodeDot, Pos: f.Pos}, f.Ident
	case *parse.VariableNode:
		if len(f.Ident) < 2 {
			return nil
		}
		base = &parse.VariableNode{NodeType: parse.NodeVariable, Pos: f.Pos, Ident: f.Ident[:1]}
		path = f.Ident[1:]
	default:
		return nil
	}
	args := []parse.Node{ident(t, "dig", n.Position()), base}
	for _, p := range path {
		args = append(args, &parse.StringNode{NodeType: parse.NodeString, Pos: n.Position(), Quoted: strconv.Quote(p), Text: p})
	}
	return args
}

func ident(t *parse.Tree, name string, pos parse.Pos) *parse.IdentifierNode {
	return parse.NewIdentifier(name).SetTree(t).SetPos(pos)
}

// walkNodes calls f on n and every node under it.
func walkNodes(n parse.Node, f func(parse.Node)) {
	if n == nil || reflectNil(n) {
		return
	}
	f(n)
	switch n := n.(type) {
	case *parse.ListNode:
		for _, c := range n.Nodes {
			walkNodes(c, f)
		}
	case *parse.ActionNode:
		walkNodes(n.Pipe, f)
	case *parse.IfNode:
		walkBranch(&n.BranchNode, f)
	case *parse.RangeNode:
		walkBranch(&n.BranchNode, f)
	case *parse.WithNode:
		walkBranch(&n.BranchNode, f)
	case *parse.TemplateNode:
		walkNodes(n.Pipe, f)
	case *parse.PipeNode:
		for _, c := range n.Cmds {
			walkNodes(c, f)
		}
	case *parse.CommandNode:
		for _, a := range n.Args {
			walkNodes(a, f)
		}
	case *parse.ChainNode:
		walkNodes(n.Node, f)
	}
}

func walkBranch(b *parse.BranchNode, f func(parse.Node)) {
	walkNodes(b.Pipe, f)
	walkNodes(b.List, f)
	walkNodes(b.ElseList, f)
}

// reflectNil reports a typed nil node (a missing else list or pipe).
func reflectNil(n parse.Node) bool {
	switch n := n.(type) {
	case *parse.ListNode:
		return n == nil
	case *parse.PipeNode:
		return n == nil
	}
	return false
}

// usedFuncs returns the names of the functions trees call, sorted.
func usedFuncs(trees []*parse.Tree) []string {
	seen := map[string]bool{}
	for _, t := range trees {
		walkNodes(t.Root, func(n parse.Node) {
			if id, ok := n.(*parse.IdentifierNode); ok {
				seen[id.Ident] = true
			}
		})
	}
	return slices.Sorted(maps.Keys(seen))
}

// checkRecursion returns an error naming a template among trees that calls
// itself, directly or through others: the call depth would be bounded only
// by text/template's 100,000 levels (hundreds of MiB of stack), and a
// template without loops in its calls cannot be made to recurse.
func checkRecursion(trees map[string]*parse.Tree) error {
	calls := map[string][]string{}
	for name, t := range trees {
		walkNodes(t.Root, func(n parse.Node) {
			if tn, ok := n.(*parse.TemplateNode); ok {
				calls[name] = append(calls[name], tn.Name)
			}
		})
	}
	const (
		visiting = 1
		done     = 2
	)
	state := map[string]int{}
	var visit func(name string) error
	visit = func(name string) error {
		switch state[name] {
		case visiting:
			return fmt.Errorf("template %q calls itself, directly or through other templates; recursion is not allowed", name)
		case done:
			return nil
		}
		state[name] = visiting
		for _, c := range calls[name] {
			if err := visit(c); err != nil {
				return err
			}
		}
		state[name] = done
		return nil
	}
	for _, name := range slices.Sorted(maps.Keys(trees)) {
		if err := visit(name); err != nil {
			return err
		}
	}
	return nil
}
