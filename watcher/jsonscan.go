package watcher

import (
	"bytes"
	"errors"
	"fmt"
)

// A small JSON scanner for the watch stream: it finds where a value ends
// and checks its grammar in one pass, without building anything. The
// decoder uses it to frame events and to cut an Application down to the
// fields crowsnest keeps (reduceApp), which it stores as they are:
// managedFields, status.resources and status.history are most of an
// Application's bytes, and encoding/json's Decoder reads every byte
// twice (once to find the value's end, once to decode it).

// errIncomplete says the data ended inside a value: more may come.
var errIncomplete = errors.New("incomplete JSON value")

// maxDepth bounds nesting, as encoding/json does.
const maxDepth = 10000

// jsonSyntaxError is malformed JSON at an offset of the scanned data.
type jsonSyntaxError struct {
	msg    string
	offset int
}

func (e *jsonSyntaxError) Error() string {
	return fmt.Sprintf("invalid JSON at offset %d: %s", e.offset, e.msg)
}

func syntaxErr(offset int, format string, args ...any) error {
	return &jsonSyntaxError{msg: fmt.Sprintf(format, args...), offset: offset}
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func skipSpace(b []byte, i int) int {
	for i < len(b) && isSpace(b[i]) {
		i++
	}
	return i
}

// skipValue returns the offset just past the JSON value that starts at
// b[i] (after white space). It checks the value's grammar; a value cut
// short by the end of b is errIncomplete.
func skipValue(b []byte, i int) (int, error) {
	return skipValueDepth(b, i, 0)
}

func skipValueDepth(b []byte, i, depth int) (int, error) {
	i = skipSpace(b, i)
	if i >= len(b) {
		return i, errIncomplete
	}
	switch c := b[i]; {
	case c == '"':
		return skipString(b, i)
	case c == '{':
		return skipContainer(b, i, depth, '}')
	case c == '[':
		return skipContainer(b, i, depth, ']')
	case c == 't':
		return skipLiteral(b, i, "true")
	case c == 'f':
		return skipLiteral(b, i, "false")
	case c == 'n':
		return skipLiteral(b, i, "null")
	case c == '-' || (c >= '0' && c <= '9'):
		return skipNumber(b, i)
	default:
		return i, syntaxErr(i, "unexpected %q", c)
	}
}

func skipContainer(b []byte, i, depth int, end byte) (int, error) {
	depth++
	if depth > maxDepth {
		return i, syntaxErr(i, "nested too deeply")
	}
	i = skipSpace(b, i+1)
	if i >= len(b) {
		return i, errIncomplete
	}
	if b[i] == end {
		return i + 1, nil
	}
	for {
		var err error
		if end == '}' {
			if i, err = skipKey(b, i); err != nil {
				return i, err
			}
		}
		if i, err = skipValueDepth(b, i, depth); err != nil {
			return i, err
		}
		var done bool
		if i, done, err = afterItem(b, i, end); err != nil || done {
			return i, err
		}
	}
}

// afterItem reads what follows an item of a container at b[i]: a comma
// (next is the next item's start) or the container's end (done; next is
// past it).
func afterItem(b []byte, i int, end byte) (next int, done bool, err error) {
	i = skipSpace(b, i)
	if i >= len(b) {
		return i, false, errIncomplete
	}
	switch b[i] {
	case ',':
		return skipSpace(b, i+1), false, nil
	case end:
		return i + 1, true, nil
	}
	return i, false, syntaxErr(i, "want ',' or %q, got %q", end, b[i])
}

// skipKey skips an object's key and its colon.
func skipKey(b []byte, i int) (int, error) {
	i = skipSpace(b, i)
	if i >= len(b) {
		return i, errIncomplete
	}
	if b[i] != '"' {
		return i, syntaxErr(i, "want a key, got %q", b[i])
	}
	i, err := skipString(b, i)
	if err != nil {
		return i, err
	}
	i = skipSpace(b, i)
	if i >= len(b) {
		return i, errIncomplete
	}
	if b[i] != ':' {
		return i, syntaxErr(i, "want ':', got %q", b[i])
	}
	return i + 1, nil
}

// skipString skips the string starting at b[i] ('"'), checking escapes
// and that no control character is left raw.
func skipString(b []byte, i int) (int, error) {
	for i++; i < len(b); {
		switch c := b[i]; {
		case c == '"':
			return i + 1, nil
		case c == '\\':
			n, err := skipEscape(b, i)
			if err != nil {
				return n, err
			}
			i = n
		case c < 0x20:
			return i, syntaxErr(i, "control character in a string")
		default:
			i++
		}
	}
	return i, errIncomplete
}

// skipEscape skips the escape at b[i] ('\\').
func skipEscape(b []byte, i int) (int, error) {
	if i+1 >= len(b) {
		return len(b), errIncomplete
	}
	switch b[i+1] {
	case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
		return i + 2, nil
	case 'u':
		if i+6 > len(b) {
			return len(b), errIncomplete
		}
		for _, h := range b[i+2 : i+6] {
			if !isHex(h) {
				return i, syntaxErr(i, "bad \\u escape")
			}
		}
		return i + 6, nil
	}
	return i, syntaxErr(i, "bad escape \\%c", b[i+1])
}

func isHex(c byte) bool {
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')
}

func skipLiteral(b []byte, i int, lit string) (int, error) {
	n := min(len(lit), len(b)-i)
	if string(b[i:i+n]) != lit[:n] {
		return i, syntaxErr(i, "want %s", lit)
	}
	if n < len(lit) {
		return len(b), errIncomplete
	}
	return i + n, nil
}

// skipNumber skips a number with JSON's grammar: -?(0|[1-9][0-9]*)
// (\.[0-9]+)?([eE][+-]?[0-9]+)?. A number that reaches the end of b may
// go on: errIncomplete.
func skipNumber(b []byte, i int) (int, error) {
	start := i
	if b[i] == '-' {
		i++
	}
	digits := func() int {
		n := 0
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
			n++
		}
		return n
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case digits() == 0:
		return numberEnd(b, i, start)
	}
	if i < len(b) && b[i] == '.' {
		i++
		if digits() == 0 {
			return numberEnd(b, i, start)
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if digits() == 0 {
			return numberEnd(b, i, start)
		}
	}
	if i >= len(b) {
		return i, errIncomplete
	}
	return i, nil
}

// numberEnd is a number missing its digits at b[i]: cut short, or
// malformed.
func numberEnd(b []byte, i, start int) (int, error) {
	if i >= len(b) {
		return i, errIncomplete
	}
	return i, syntaxErr(start, "malformed number")
}

// objectFields calls field for each key of the object b (after white
// space) with the key's raw bytes (between the quotes) and the value's
// bounds, and reports whether b is an object. A key with an escape is
// given as written (unescapedKey reads it).
func objectFields(b []byte, field func(key []byte, start, end int)) (ok bool, err error) {
	i := skipSpace(b, 0)
	if i >= len(b) {
		return false, errIncomplete
	}
	if b[i] != '{' {
		return false, nil
	}
	i = skipSpace(b, i+1)
	if i >= len(b) {
		return true, errIncomplete
	}
	if b[i] == '}' {
		return true, nil
	}
	for {
		keyStart := i + 1
		if i, err = skipKey(b, i); err != nil {
			return true, err
		}
		key := b[keyStart:bytes.LastIndexByte(b[:i], '"')]
		start := skipSpace(b, i)
		if i, err = skipValueDepth(b, start, 1); err != nil {
			return true, err
		}
		field(key, start, i)
		var done bool
		if i, done, err = afterItem(b, i, '}'); err != nil || done {
			return true, err
		}
	}
}
