package valuesize

import (
	"encoding/json"
	"fmt"
	"reflect"
	"testing"
)

const limit = 1 << 20

// Printed is never more than what fmt or encoding/json print, and
// walks a value built from shared parts in steps that grow with its
// distinct parts.
func TestPrinted(t *testing.T) {
	shared := []any{"ab", 1.5}
	values := []any{
		nil, "", "text", 42, 2.5, true, []any{}, []any{"a", nil, []any{1, 2}}, map[string]any{},
		map[string]any{"k": []any{"v", map[string]any{"x": "yz"}}}, []string{"a", "bc"}, []byte("bytes"),
		[]any{shared, shared, shared}, struct{ A, B string }{"a", "b"}, map[string]string{"k": "v"},
	}
	for _, v := range values {
		size, _ := Printed(reflect.ValueOf(v), limit)
		printed := len(fmt.Sprint(v))
		if b, err := json.Marshal(v); err == nil {
			printed = min(printed, len(b))
		}
		if size > printed {
			t.Errorf("Printed(%#v) = %d, more than the %d bytes it prints in", v, size, printed)
		}
	}
	l := []any{1}
	for range 60 {
		l = []any{l, l}
	}
	size, work := Printed(reflect.ValueOf(l), limit)
	if size <= limit || work > 200 {
		t.Errorf("a list doubled 60 times: size %d, work %d; want over %d after a walk of its 61 lists", size, work, limit)
	}
	d := map[string]any{}
	d["self"] = []any{d}
	if size, _ := Printed(reflect.ValueOf(d), limit); size <= limit {
		t.Errorf("a dict holding itself: size %d, want over the limit", size)
	}
}
