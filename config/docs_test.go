package config

// examples/config/crowsnest.yaml is the config reference (docs/configuration.md
// says so): every key of Config must be in it, set or in a commented
// example, and every key it shows must exist. docs/configuration.md names
// every top-level section.

import (
	"os"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/crowsnest-dev/crowsnest/config/internal/fieldpath"
)

const (
	referencePath = "../examples/config/crowsnest.yaml"
	referenceName = "examples/config/crowsnest.yaml"
)

var nodeDecoderType = reflect.TypeFor[nodeDecoder]()

// keyPaths returns the YAML key paths of t, following yaml tags: structs
// add their fields, maps a "*" segment for their keys, slices and pointers
// nothing, inline embedded structs their fields. Types that decode
// themselves (Duration, SecretRef, CredentialRef) are leaves.
func keyPaths(t reflect.Type, prefix string, out *[]string) {
	if reflect.PointerTo(t).Implements(nodeDecoderType) {
		return
	}
	switch t.Kind() {
	case reflect.Pointer, reflect.Slice:
		keyPaths(t.Elem(), prefix, out)
	case reflect.Map:
		p := fieldpath.Join(prefix, "*")
		*out = append(*out, p)
		keyPaths(t.Elem(), p, out)
	case reflect.Struct:
		for f := range t.Fields() {
			name, opts, _ := strings.Cut(f.Tag.Get("yaml"), ",")
			if name == "-" || !f.IsExported() {
				continue
			}
			if f.Anonymous && name == "" && opts == "inline" {
				keyPaths(f.Type, prefix, out) // its keys are the struct's own
				continue
			}
			if name == "" {
				name = strings.ToLower(f.Name)
			}
			p := fieldpath.Join(prefix, name)
			*out = append(*out, p)
			keyPaths(f.Type, p, out)
		}
	}
}

// keyRE is a YAML key at the start of a line's content, after any list
// markers: plain, or quoted.
var keyRE = regexp.MustCompile(`^(?:-\s+)*("[^"]*"|'[^']*'|[A-Za-z_][\w.-]*)\s*:(?:\s+(.*))?$`)

type docKey struct {
	path string
	line int
}

// documentedKeys reads the key paths a commented YAML file shows: its keys
// and the keys of its commented-out examples ("#   - name: x"), nested by
// indentation as if uncommented ("# " removed), and the keys of flow
// mappings on a key's line ("helm: {imageName: ""}"). Prose comment lines
// do not look like keys and are skipped.
func documentedKeys(text string) []docKey {
	type open struct {
		indent int
		key    string
	}
	var (
		stack []open
		out   []docKey
	)
	for i, line := range strings.Split(text, "\n") {
		content := strings.TrimLeft(line, " ")
		indent := len(line) - len(content)
		if strings.HasPrefix(content, "#") {
			// "# " is zero-width: "  #   key:" sits at indent 4, as
			// "    key:" would once uncommented. A second "# " (an example
			// inside an example) does not indent.
			rest := strings.TrimPrefix(content, "#")
			trimmed := strings.TrimLeft(rest, " ")
			indent += len(rest) - len(trimmed) - 1
			content = strings.TrimLeft(strings.TrimPrefix(trimmed, "#"), " ")
		}
		// The key's column: list markers ("- ") open an element in which
		// the key and its siblings line up.
		for strings.HasPrefix(content, "- ") {
			trimmed := strings.TrimLeft(content[1:], " ")
			indent += len(content) - len(trimmed)
			content = trimmed
		}
		m := keyRE.FindStringSubmatch(content)
		if m == nil {
			continue
		}
		key := strings.Trim(m[1], `"'`)
		for len(stack) > 0 && stack[len(stack)-1].indent >= indent {
			stack = stack[:len(stack)-1]
		}
		stack = append(stack, open{indent, key})
		keys := make([]string, len(stack))
		for j, o := range stack {
			// A map key may hold dots (a host name): it is one segment.
			keys[j] = strings.ReplaceAll(o.key, ".", "_")
		}
		path := strings.Join(keys, ".")
		out = append(out, docKey{path, i + 1})
		if v := strings.TrimSpace(m[2]); strings.HasPrefix(v, "{") || strings.HasPrefix(v, "[{") {
			var n yaml.Node
			if yaml.Unmarshal([]byte(v), &n) == nil {
				for _, k := range flowKeys(&n, path) {
					out = append(out, docKey{k, i + 1})
				}
			}
		}
	}
	return out
}

// flowKeys returns the key paths inside a flow value under prefix.
func flowKeys(n *yaml.Node, prefix string) []string {
	var out []string
	switch n.Kind {
	case yaml.DocumentNode, yaml.SequenceNode:
		for _, c := range n.Content {
			out = append(out, flowKeys(c, prefix)...)
		}
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			p := prefix + "." + n.Content[i].Value
			out = append(out, p)
			out = append(out, flowKeys(n.Content[i+1], p)...)
		}
	}
	return out
}

// matches reports whether the documented path fits the pattern, where a
// "*" segment is any map key.
func matches(pattern, path string) bool {
	ps, ks := strings.Split(pattern, "."), strings.Split(path, ".")
	if len(ps) != len(ks) {
		return false
	}
	for i := range ps {
		if ps[i] != "*" && ps[i] != ks[i] {
			return false
		}
	}
	return true
}

func TestReferenceConfigDocumentsEveryKey(t *testing.T) {
	data, err := os.ReadFile(referencePath)
	if err != nil {
		t.Fatal(err)
	}
	var patterns []string
	keyPaths(reflect.TypeFor[Config](), "", &patterns)
	documented := documentedKeys(string(data))
	if len(patterns) < 50 || len(documented) < 50 {
		t.Fatalf("read %d config keys and %d documented keys; the walk or the parse is broken", len(patterns), len(documented))
	}
	for _, p := range patterns {
		if !slices.ContainsFunc(documented, func(d docKey) bool { return matches(p, d.path) }) {
			parent, key := "the top level", p
			if i := strings.LastIndex(p, "."); i >= 0 {
				parent, key = strings.ReplaceAll(p[:i], "*", "<name>"), p[i+1:]
			}
			t.Errorf("config key %s is not in %s: add `%s:` under %s with its default and meaning (commented out if it has no default)", p, referenceName, key, parent)
		}
	}
	for _, d := range documented {
		if !slices.ContainsFunc(patterns, func(p string) bool { return matches(p, d.path) }) {
			t.Errorf("%s:%d shows key %s, which Config does not have: fix or remove it", referenceName, d.line, d.path)
		}
	}
}

func TestDocumentedKeysReadsCommentedExamples(t *testing.T) {
	const text = `# A prose line: not a key.
top:
  plain: 1
  # list:
  #   - name: a   # trailing: comment
  #     # inner: x
  #     flow: {one: 1, two: [{three: 3}]}
  # other: ""
# second:
#   child: y
`
	var got []string
	for _, d := range documentedKeys(text) {
		got = append(got, d.path)
	}
	want := []string{"top", "top.plain", "top.list", "top.list.name", "top.list.inner", "top.list.flow",
		"top.list.flow.one", "top.list.flow.two", "top.list.flow.two.three", "top.other", "second", "second.child"}
	if !slices.Equal(want, got) {
		t.Errorf("documentedKeys:\nwant %v\ngot  %v", want, got)
	}
}

func TestDocsConfigurationNamesEverySection(t *testing.T) {
	const page = "docs/configuration.md"
	data, err := os.ReadFile("../" + page)
	if err != nil {
		t.Fatal(err)
	}
	text := string(data)
	for f := range reflect.TypeFor[Config]().Fields() {
		name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if name == "apiVersion" || name == "kind" {
			continue // the file's identity, shown in the page's first lines
		}
		if !strings.Contains(text, "`"+name+":`") && !strings.Contains(text, "`"+name+"`") {
			t.Errorf("%s does not name the config section %s: add a paragraph about `%s:` (what it is for; the keys are in %s)", page, name, name, referenceName)
		}
	}
}
