package git

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strconv"
	"strings"
	"unicode"

	"go.yaml.in/yaml/v3"
)

// Errors from the YAML editors. They are terminal: retrying the same edit
// on the same file fails the same way.
var (
	ErrNotMapping = errors.New("YAML value is not a mapping")
	ErrNotScalar  = errors.New("YAML value is not a scalar")
	ErrMultiDoc   = errors.New("YAML file has more than one document")
	ErrAlias      = errors.New("YAML path goes through an alias")
	ErrNoIndex    = errors.New("YAML sequence index out of range")
	ErrBadValue   = errors.New("value cannot be written to YAML and read back the same")
)

// errReformat says the line-level editor cannot make an edit in place; the
// edit is then made on the node tree and the document re-emitted.
var errReformat = errors.New("edit needs re-emitting the document")

type stepKind int

const (
	stepKey        stepKind = iota // a mapping key
	stepIndex                      // an existing sequence index
	stepItem                       // the sequence item (a mapping) whose field equals value; appended when missing
	stepScalarItem                 // the scalar sequence item match accepts; appended when missing
)

// step is one element of a path into a YAML document.
type step struct {
	kind  stepKind
	key   string // stepKey; stepItem: the field
	value string // stepItem: the field's value
	index int
	match func(string) bool // stepScalarItem
}

func key(k string) step                   { return step{kind: stepKey, key: k} }
func item(field, value string) step       { return step{kind: stepItem, key: field, value: value} }
func scalarItem(m func(string) bool) step { return step{kind: stepScalarItem, match: m} }

// dotted splits a Helm-style key ("image.tag", "containers.0.image") into
// steps; all-digit parts index sequences that must exist.
func dotted(p string) []step {
	var steps []step
	for part := range strings.SplitSeq(p, ".") {
		if n, err := strconv.Atoi(part); err == nil && n >= 0 && part == strconv.Itoa(n) {
			steps = append(steps, step{kind: stepIndex, index: n, key: part})
			continue
		}
		steps = append(steps, key(part))
	}
	return steps
}

// leaf is a scalar to write: a string, or a bool for Argo CD's forcestring.
type leaf struct {
	value string
	tag   string
}

func str(v string) leaf { return leaf{value: v, tag: "!!str"} }

// edit sets the scalar at path, or deletes the key at its end.
type edit struct {
	path []step
	set  leaf
	del  bool
	// version marks the edit whose old value is the image's old version.
	version bool
}

func pathString(p []step) string {
	var parts []string
	for _, s := range p {
		switch s.kind {
		case stepItem:
			parts = append(parts, fmt.Sprintf("[%s=%s]", s.key, s.value))
		case stepScalarItem:
			parts = append(parts, "[]")
		default:
			parts = append(parts, s.key)
		}
	}
	return strings.Join(parts, ".")
}

// editYAML applies e to src. The node tree defines what the edit means; the
// line-level edit, which keeps every other byte, is used when the document
// it yields means exactly the same, otherwise the re-emitted tree is
// (reformatted says so). old is the previous scalar value.
func editYAML(src []byte, e edit) (out []byte, old string, changed, reformatted bool, err error) {
	if strings.ContainsFunc(e.set.value, unicode.IsControl) {
		return nil, "", false, false, fmt.Errorf("value %q: %w", e.set.value, ErrBadValue)
	}
	doc, err := parseSingle(src)
	if err != nil {
		return nil, "", false, false, err
	}
	old, changed, err = applyNode(doc, e)
	if err != nil || !changed {
		return src, old, false, false, err
	}
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(doc); err != nil {
		return nil, "", false, false, fmt.Errorf("encoding YAML: %w", err)
	}
	nodeOut := buf.Bytes()
	var check any
	if err := yaml.Unmarshal(nodeOut, &check); err != nil {
		// yaml.v3 cannot always write what it can read (odd whitespace in
		// block scalars); refuse rather than write a broken file.
		return nil, "", false, false, fmt.Errorf("cannot write %q as YAML: %w", e.set.value, err)
	}

	orig, err := parseSingle(src)
	if err != nil {
		return nil, "", false, false, err
	}
	lineOut, lerr := applyText(src, orig, e)
	if lerr == nil && sameMeaning(lineOut, nodeOut) && holds(lineOut, e) {
		return lineOut, old, true, false, nil
	}
	if !holds(nodeOut, e) {
		return nil, "", false, false, fmt.Errorf("value %q: %w", e.set.value, ErrBadValue)
	}
	return nodeOut, old, true, true, nil
}

// holds says whether out already has e made: making it again changes
// nothing.
func holds(out []byte, e edit) bool {
	doc, err := parseSingle(out)
	if err != nil {
		return false
	}
	_, changed, err := applyNode(doc, e)
	return err == nil && !changed
}

func parseSingle(src []byte) (*yaml.Node, error) {
	dec := yaml.NewDecoder(bytes.NewReader(src))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return &yaml.Node{Kind: yaml.DocumentNode}, nil
		}
		return nil, fmt.Errorf("parsing YAML: %w", err)
	}
	var next yaml.Node
	if err := dec.Decode(&next); !errors.Is(err, io.EOF) {
		if err != nil {
			return nil, fmt.Errorf("parsing YAML: %w", err)
		}
		return nil, ErrMultiDoc
	}
	// Decoding catches what the node parser lets through (duplicate keys).
	if len(doc.Content) == 1 {
		var v any
		if err := doc.Decode(&v); err != nil {
			return nil, fmt.Errorf("parsing YAML: %w", err)
		}
	}
	if len(doc.Content) == 1 && !isNull(doc.Content[0]) && doc.Content[0].Kind != yaml.MappingNode {
		return nil, fmt.Errorf("top level: %w", ErrNotMapping)
	}
	return &doc, nil
}

func sameMeaning(a, b []byte) bool {
	var va, vb any
	if yaml.Unmarshal(a, &va) != nil || yaml.Unmarshal(b, &vb) != nil {
		return false
	}
	return reflect.DeepEqual(va, vb)
}

func isNull(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null"
}

func findKey(m *yaml.Node, k string) (int, bool) {
	for i := 0; i+1 < len(m.Content); i += 2 {
		// Only string keys: "~" or "1" as a key is null or a number.
		if m.Content[i].Kind == yaml.ScalarNode && m.Content[i].Value == k && m.Content[i].ShortTag() == "!!str" {
			return i, true
		}
	}
	return 0, false
}

func findItem(seq *yaml.Node, s step) (int, bool) {
	for i, it := range seq.Content {
		switch {
		case s.kind == stepScalarItem && it.Kind == yaml.ScalarNode && s.match(it.Value):
			return i, true
		case s.kind == stepItem && it.Kind == yaml.MappingNode:
			if j, ok := findKey(it, s.key); ok && it.Content[j+1].Kind == yaml.ScalarNode && it.Content[j+1].Value == s.value {
				return i, true
			}
		}
	}
	return 0, false
}

// applyNode makes e on the node tree, creating what is missing.
func applyNode(doc *yaml.Node, e edit) (old string, changed bool, err error) {
	if len(doc.Content) == 0 {
		if e.del {
			return "", false, nil
		}
		doc.Content = []*yaml.Node{{Kind: yaml.MappingNode, Tag: "!!map"}}
	}
	cur := doc.Content[0]
	for i, s := range e.path {
		last := i == len(e.path)-1
		if cur.Kind == yaml.AliasNode {
			return "", false, fmt.Errorf("%s: %w", pathString(e.path[:i]), ErrAlias)
		}
		if isNull(cur) {
			if e.del {
				return "", false, nil
			}
			if s.kind == stepKey {
				*cur = yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Line: cur.Line, Column: cur.Column}
			} else {
				*cur = yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq", Line: cur.Line, Column: cur.Column}
			}
		}
		var next *yaml.Node
		switch s.kind {
		case stepKey:
			if cur.Kind != yaml.MappingNode {
				return "", false, fmt.Errorf("%s: %w", pathString(e.path[:i]), ErrNotMapping)
			}
			j, ok := findKey(cur, s.key)
			if ok && last && e.del {
				old = cur.Content[j+1].Value
				cur.Content = append(cur.Content[:j], cur.Content[j+2:]...)
				return old, true, nil
			}
			next = keyChild(cur, s.key, j, ok, e.del)
		case stepIndex:
			if cur.Kind != yaml.SequenceNode || s.index >= len(cur.Content) {
				return "", false, fmt.Errorf("%s: %w", pathString(e.path[:i+1]), ErrNoIndex)
			}
			next = cur.Content[s.index]
		case stepItem, stepScalarItem:
			if cur.Kind != yaml.SequenceNode {
				return "", false, fmt.Errorf("%s: YAML value is not a sequence: %w", pathString(e.path[:i]), ErrNotMapping)
			}
			next = itemChild(cur, s, e.del)
		}
		if next == nil {
			return "", false, nil // nothing there to delete
		}
		cur = next
	}
	if e.del {
		return "", false, nil
	}
	return setScalar(cur, e)
}

// keyChild is the value of key in the mapping cur (found at j when ok),
// created as null when missing; nil when missing and del.
func keyChild(cur *yaml.Node, key string, j int, ok, del bool) *yaml.Node {
	switch {
	case ok:
		return cur.Content[j+1]
	case del:
		return nil
	}
	v := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!null"}
	cur.Content = append(cur.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: key}, v)
	return v
}

// itemChild is the item of the sequence cur that s selects, appended
// when missing; nil when missing and del.
func itemChild(cur *yaml.Node, s step, del bool) *yaml.Node {
	j, ok := findItem(cur, s)
	switch {
	case ok:
		return cur.Content[j]
	case del:
		return nil
	case s.kind == stepItem:
		it := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Content: []*yaml.Node{
			{Kind: yaml.ScalarNode, Tag: "!!str", Value: s.key},
			{Kind: yaml.ScalarNode, Tag: "!!str", Value: s.value},
		}}
		cur.Content = append(cur.Content, it)
		return it
	}
	it := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!null"}
	cur.Content = append(cur.Content, it)
	return it
}

// setScalar sets the scalar cur to e's value.
func setScalar(cur *yaml.Node, e edit) (old string, changed bool, err error) {
	if cur.Kind != yaml.ScalarNode {
		return "", false, fmt.Errorf("%s: %w", pathString(e.path), ErrNotScalar)
	}
	if !isNull(cur) {
		old = cur.Value
	}
	// Equal text of another type (tag: 1.0 is a float) is rewritten as
	// the type asked for.
	if !isNull(cur) && cur.Value == e.set.value && cur.ShortTag() == e.set.tag {
		return old, false, nil
	}
	cur.Value, cur.Tag = e.set.value, e.set.tag
	if e.set.tag != "!!str" || cur.Style&(yaml.LiteralStyle|yaml.FoldedStyle) != 0 {
		cur.Style = 0
	}
	return old, true, nil
}
