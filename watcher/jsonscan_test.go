package watcher

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"testing/iotest"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/watch"
)

// FuzzSkipValue holds the scanner to encoding/json's grammar: a whole
// value it accepts is valid JSON and the reverse, and a valid value cut
// short is incomplete, never malformed.
func FuzzSkipValue(f *testing.F) {
	for _, s := range []string{`{"a":[1,2.5e-3,"x\u00e9\n"],"b":{"c":null,"d":true}}`, `-0`, `01`, `1.`, `"\x"`, `[1,]`, `{"a" 1}`, `{}`, `[]`, `"`, "\"\t\""} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		// A trailing space ends a number at the very end, which
		// otherwise could go on (incomplete).
		padded := append(append([]byte{}, b...), ' ')
		end, err := skipValue(padded, 0)
		whole := err == nil && skipSpace(padded, end) == len(padded)
		valid := json.Valid(b)
		if whole != valid {
			t.Fatalf("skipValue(%q): whole value %v (end %d, %v); json.Valid %v", b, whole, end, err, valid)
		}
		if !valid {
			return
		}
		for cut := range len(b) {
			if _, err := skipValue(b[:cut], 0); err != nil && !errors.Is(err, errIncomplete) {
				t.Fatalf("valid %q cut at %d: %v, want incomplete", b, cut, err)
			}
		}
	})
}

// Events split anywhere across reads, and one larger than the buffer,
// come out whole and in order.
func TestAppEventDecoderFramesAcrossReads(t *testing.T) {
	big := strings.Repeat("x", 100<<10)
	var stream strings.Builder
	for i := range 5 {
		ann := ""
		if i == 3 {
			ann = `,"annotations":{"big":"` + big + `"}`
		}
		fmt.Fprintf(&stream, `{"type":"MODIFIED","object":{"metadata":{"name":"a%d","resourceVersion":"%d"%s},"status":{"resources":[{"x":"}]\"{"}]}}}`+"\n", i, i, ann)
	}
	for name, r := range map[string]io.Reader{
		"one byte at a time": iotest.OneByteReader(strings.NewReader(stream.String())),
		"half reads":         iotest.HalfReader(strings.NewReader(stream.String())),
		"error with data":    iotest.DataErrReader(strings.NewReader(stream.String())),
	} {
		t.Run(name, func(t *testing.T) {
			d := newAppEventDecoder(io.NopCloser(r))
			for i := range 5 {
				typ, obj, err := d.Decode()
				if err != nil {
					t.Fatalf("event %d: %v", i, err)
				}
				u := Unstored(obj).(*unstructured.Unstructured)
				if typ != watch.Modified || u.GetName() != fmt.Sprintf("a%d", i) {
					t.Fatalf("event %d: %s %s", i, typ, u.GetName())
				}
				if i == 3 && len(u.GetAnnotations()["big"]) != len(big) {
					t.Fatalf("the large event lost its annotation")
				}
			}
			if _, _, err := d.Decode(); err != io.EOF { //nolint:errorlint // as watch.StreamWatcher compares
				t.Fatalf("after the last event: %v, want io.EOF", err)
			}
		})
	}
}
