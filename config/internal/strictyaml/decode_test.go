package strictyaml

import (
	"reflect"
	"testing"

	"github.com/google/go-cmp/cmp"
	"go.yaml.in/yaml/v3"
)

type base struct {
	Title string `yaml:"title"`
	Text  string `yaml:"text"`
}

type extended struct {
	base  `yaml:",inline"` // unexported: not a key source
	Block base             `yaml:",inline"` // named, not embedded: no key
	Inner struct {
		base `yaml:",inline"`
	} `yaml:"inner"`
	Card string `yaml:"card"`
	Skip string `yaml:"-"`
}

type outer struct {
	Base `yaml:",inline"`
	Card string `yaml:"card"`
}

// Base is exported so outer can embed it inline.
type Base = base

// Fields lists inline embedded structs' keys as the struct's own, with the
// index that reaches them, and nothing else.
func TestFields(t *testing.T) {
	want := []Field{{"title", []int{0, 0}}, {"text", []int{0, 1}}, {"card", []int{1}}}
	if d := cmp.Diff(want, Fields(reflect.TypeFor[outer]())); d != "" {
		t.Errorf("outer (-want +got):\n%s", d)
	}
	want = []Field{{"inner", []int{2}}, {"card", []int{3}}}
	if d := cmp.Diff(want, Fields(reflect.TypeFor[extended]())); d != "" {
		t.Errorf("extended (-want +got):\n%s", d)
	}
}

// An inline key decodes, and its problems name it as the struct's own.
func TestDecodeInline(t *testing.T) {
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte("title: a\ncard: b\ntext: [1]\ntitel: c\n"), &doc); err != nil {
		t.Fatal(err)
	}
	var got []string
	d := &Decoder{Report: func(path string, _ int, format string, _ ...any) { got = append(got, path+": "+format) }}
	var o outer
	d.Decode(doc.Content[0], reflect.ValueOf(&o).Elem(), "x")
	if o.Title != "a" || o.Card != "b" {
		t.Errorf("decoded %+v", o)
	}
	want := []string{"x.text: expected %s, got %s", "x.titel: unknown field (did you mean %q?)"}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("problems (-want +got):\n%s", d)
	}
}
