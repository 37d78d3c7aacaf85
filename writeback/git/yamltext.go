package git

import (
	"bytes"
	"strings"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"
)

// text is a YAML source split into lines (each keeping its line break).
type text struct {
	lines [][]byte
	eol   string
}

func newText(src []byte) *text {
	t := &text{eol: "\n"}
	if bytes.Contains(src, []byte("\r\n")) {
		t.eol = "\r\n"
	}
	for len(src) > 0 {
		i := bytes.IndexByte(src, '\n')
		if i < 0 {
			t.lines = append(t.lines, src)
			break
		}
		t.lines = append(t.lines, src[:i+1])
		src = src[i+1:]
	}
	return t
}

func (t *text) bytes() []byte { return bytes.Join(t.lines, nil) }

// content is line n (1-based) without its line break.
func (t *text) content(n int) []byte {
	return bytes.TrimRight(t.lines[n-1], "\r\n")
}

func indentOf(b []byte) int { return len(b) - len(bytes.TrimLeft(b, " ")) }

func blankOrComment(b []byte) bool {
	s := bytes.TrimSpace(b)
	return len(s) == 0 || s[0] == '#'
}

// offset converts a yaml.v3 column (1-based, in characters) on line n to a
// byte offset in that line.
func (t *text) offset(n, col int) (int, bool) {
	if n < 1 || n > len(t.lines) {
		return 0, false
	}
	b := t.content(n)
	off := 0
	for c := 1; c < col; c++ {
		if off >= len(b) {
			return 0, false
		}
		_, size := utf8.DecodeRune(b[off:])
		off += size
	}
	return off, true
}

// endLine is the last line of n's block: its last descendant's line,
// extended over continuation lines (block scalars, multi-line plain
// scalars) indented deeper than base.
func (t *text) endLine(n *yaml.Node, base int) int {
	last := min(maxLine(n), len(t.lines))
	for j := last + 1; j <= len(t.lines); j++ {
		c := t.content(j)
		if len(bytes.TrimSpace(c)) == 0 {
			continue
		}
		if indentOf(c) <= base || blankOrComment(c) {
			break
		}
		last = j
	}
	return last
}

func maxLine(n *yaml.Node) int {
	m := n.Line
	for _, c := range n.Content {
		m = max(m, maxLine(c))
	}
	return m
}

// insertAfter puts lines of frag after line n (0: at the top), each
// indented by indent spaces.
func (t *text) insertAfter(n, indent int, frag string) {
	n = min(max(n, 0), len(t.lines))
	var add [][]byte
	pad := strings.Repeat(" ", indent)
	for l := range strings.SplitSeq(strings.TrimSuffix(frag, "\n"), "\n") {
		add = append(add, []byte(pad+l+t.eol))
	}
	if n > 0 && !bytes.HasSuffix(t.lines[n-1], []byte("\n")) {
		t.lines[n-1] = append(append([]byte(nil), t.lines[n-1]...), t.eol...)
	}
	rest := append([][]byte(nil), t.lines[n:]...)
	t.lines = append(append(t.lines[:n], add...), rest...)
}

func (t *text) deleteLines(from, to int) {
	t.lines = append(t.lines[:from-1], t.lines[to:]...)
}

// applyText makes e in src line by line, touching only the bytes of the
// scalar it sets, the lines it inserts or the lines of the key it deletes.
// doc is src parsed. It returns errReformat for layouts it does not edit
// in place (flow collections, block scalars, creating under a key whose
// value is written as ~ or null).
func applyText(src []byte, doc *yaml.Node, e edit) ([]byte, error) {
	t := newText(src)
	if len(doc.Content) == 0 {
		return t.insertRest(e.path, e.set, len(t.lines), 0)
	}
	cur := doc.Content[0]
	var parentKey *yaml.Node
	for i, s := range e.path {
		if isNull(cur) {
			// "key:" with nothing after it: insert the rest below the key.
			if parentKey == nil || cur.Value != "" || e.del {
				return nil, errReformat
			}
			return t.insertRest(e.path[i:], e.set, parentKey.Line, parentKey.Column-1+2)
		}
		if cur.Style&yaml.FlowStyle != 0 {
			return nil, errReformat
		}
		switch s.kind {
		case stepKey:
			if cur.Kind != yaml.MappingNode {
				return nil, errReformat
			}
			j, ok := findKey(cur, s.key)
			if !ok {
				return t.insertRest(e.path[i:], e.set, t.endLine(cur, cur.Column-1), cur.Column-1)
			}
			k, v := cur.Content[j], cur.Content[j+1]
			if e.del && i == len(e.path)-1 {
				prefix, ok := t.offset(k.Line, k.Column)
				if !ok || len(bytes.TrimSpace(t.content(k.Line)[:prefix])) != 0 || maxLine(v) > len(t.lines) {
					return nil, errReformat
				}
				t.deleteLines(k.Line, t.endLine(v, k.Column-1))
				return t.bytes(), nil
			}
			parentKey, cur = k, v
		case stepIndex:
			if cur.Kind != yaml.SequenceNode || s.index >= len(cur.Content) {
				return nil, errReformat
			}
			parentKey, cur = nil, cur.Content[s.index]
		case stepItem, stepScalarItem:
			if cur.Kind != yaml.SequenceNode {
				return nil, errReformat
			}
			j, ok := findItem(cur, s)
			if !ok {
				return t.insertRest(e.path[i:], e.set, t.endLine(cur, cur.Column-1), cur.Column-1)
			}
			parentKey, cur = nil, cur.Content[j]
		}
	}
	if cur.Kind != yaml.ScalarNode {
		return nil, errReformat
	}
	if err := t.setScalar(cur, e.set); err != nil {
		return nil, err
	}
	return t.bytes(), nil
}

// insertRest renders the missing rest of a path and inserts it after
// line n at indent.
func (t *text) insertRest(rest []step, v leaf, n, indent int) ([]byte, error) {
	frag, err := fragment(rest, v)
	if err != nil {
		return nil, err
	}
	t.insertAfter(n, indent, frag)
	return t.bytes(), nil
}

// setScalar replaces the text of scalar n, keeping its quoting style.
func (t *text) setScalar(n *yaml.Node, v leaf) error {
	start, ok := t.offset(n.Line, n.Column)
	emptyNull := isNull(n) && n.Value == ""
	if n.Line < 1 || n.Line > len(t.lines) || (!ok && !emptyNull) {
		return errReformat
	}
	line := t.content(n.Line)
	style := n.Style
	var end int
	switch {
	case isNull(n) && n.Value == "":
		// "key:" with no value: write one after the colon.
		start = min(start, len(line))
		if !ok {
			start = len(line)
		}
		rendered, err := renderScalar(v, 0)
		if err != nil {
			return err
		}
		if start > 0 && line[start-1] != ' ' {
			rendered = " " + rendered
		}
		t.replace(n.Line, start, start, rendered)
		return nil
	case style&yaml.DoubleQuotedStyle != 0:
		end = quotedEnd(line, start, '"')
	case style&yaml.SingleQuotedStyle != 0:
		end = quotedEnd(line, start, '\'')
	case style&(yaml.LiteralStyle|yaml.FoldedStyle|yaml.FlowStyle) != 0:
		return errReformat
	default:
		end = start + len(n.Value)
		if end > len(line) || string(line[start:end]) != n.Value {
			return errReformat
		}
		if v.tag != "!!str" {
			style = 0
		}
	}
	if end < 0 {
		return errReformat
	}
	rendered, err := renderScalar(v, style)
	if err != nil {
		return err
	}
	t.replace(n.Line, start, end, rendered)
	return nil
}

func (t *text) replace(n, start, end int, s string) {
	l := t.lines[n-1]
	out := make([]byte, 0, len(l)+len(s))
	out = append(out, l[:start]...)
	out = append(out, s...)
	out = append(out, l[end:]...)
	t.lines[n-1] = out
}

// quotedEnd is the offset just past the closing quote of the quoted scalar
// at start, or -1 when it does not close on this line.
func quotedEnd(line []byte, start int, q byte) int {
	if start >= len(line) || line[start] != q {
		return -1
	}
	for i := start + 1; i < len(line); i++ {
		switch {
		case q == '"' && line[i] == '\\':
			i++
		case line[i] == q && q == '\'' && i+1 < len(line) && line[i+1] == '\'':
			i++
		case line[i] == q:
			return i + 1
		}
	}
	return -1
}

// renderScalar writes v the way yaml.v3 would in style, quoting a plain
// string when it would otherwise read back as another type.
func renderScalar(v leaf, style yaml.Style) (string, error) {
	n := &yaml.Node{Kind: yaml.ScalarNode, Tag: v.tag, Value: v.value, Style: style}
	b, err := yaml.Marshal(n)
	if err != nil {
		return "", err
	}
	s := strings.TrimSuffix(string(b), "\n")
	if strings.ContainsAny(s, "\n\r") {
		return "", errReformat
	}
	return s, nil
}

// fragment renders the missing rest of a path, ending in v, as block YAML
// with two-space indentation.
func fragment(path []step, v leaf) (string, error) {
	n, err := build(path, v)
	if err != nil {
		return "", err
	}
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(n); err != nil {
		return "", err
	}
	return buf.String(), nil
}

func build(path []step, v leaf) (*yaml.Node, error) {
	if len(path) == 0 {
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: v.tag, Value: v.value}, nil
	}
	s := path[0]
	switch s.kind {
	case stepKey:
		rest, err := build(path[1:], v)
		if err != nil {
			return nil, err
		}
		return &yaml.Node{Kind: yaml.MappingNode, Content: []*yaml.Node{{Kind: yaml.ScalarNode, Tag: "!!str", Value: s.key}, rest}}, nil
	case stepItem:
		rest, err := build(path[1:], v)
		if err != nil {
			return nil, err
		}
		it := &yaml.Node{Kind: yaml.MappingNode, Content: []*yaml.Node{
			{Kind: yaml.ScalarNode, Tag: "!!str", Value: s.key},
			{Kind: yaml.ScalarNode, Tag: "!!str", Value: s.value},
		}}
		if rest.Kind != yaml.MappingNode {
			return nil, errReformat
		}
		it.Content = append(it.Content, rest.Content...)
		return &yaml.Node{Kind: yaml.SequenceNode, Content: []*yaml.Node{it}}, nil
	case stepScalarItem:
		if len(path) != 1 {
			return nil, errReformat
		}
		return &yaml.Node{Kind: yaml.SequenceNode, Content: []*yaml.Node{{Kind: yaml.ScalarNode, Tag: v.tag, Value: v.value}}}, nil
	default:
		return nil, errReformat
	}
}
