package notify

import (
	"strconv"
	"text/template/parse"
)

// rewriteTree makes field chains total: `.a.b.c` and `$x.a.b` become
// `dig . "a" "b" "c"` and `dig $x "a" "b"`, so a missing intermediate
// gives nil instead of "nil pointer evaluating interface {}.b", and every
// printed pipeline ends in orEmpty, so nil prints as "" rather than
// "<no value>". Method calls with arguments are left alone.
func rewriteTree(t *parse.Tree) {
	rewriteNode(t, t.Root)
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
