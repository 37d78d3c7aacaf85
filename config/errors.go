package config

import (
	"fmt"
	"strings"

	"github.com/crowsnest-dev/crowsnest/config/internal/fieldpath"
)

// FieldError is one problem with one field of a config file.
type FieldError struct {
	// Path names the field, e.g. "notifications.triggers[2].when".
	Path string
	// Line is the 1-based line in the file, or 0 when unknown.
	Line int
	Msg  string
}

func (e FieldError) Error() string {
	s := e.Msg
	if e.Path != "" {
		s = e.Path + ": " + s
	}
	if e.Line > 0 {
		s = fmt.Sprintf("line %d: %s", e.Line, s)
	}
	return s
}

// ValidationError holds every problem found in one config, so a user sees
// them all at once instead of fixing one per run.
type ValidationError struct {
	Errors []FieldError
}

func (e *ValidationError) Error() string {
	msgs := make([]string, len(e.Errors))
	for i, fe := range e.Errors {
		msgs[i] = fe.Error()
	}
	return strings.Join(msgs, "\n")
}

// fieldErrors collects problems while decoding and validating.
type fieldErrors struct {
	list []FieldError
	// lines maps field paths to the line they were read from, so
	// validation errors can point into the file too.
	lines map[string]int
}

func (fe *fieldErrors) add(path string, line int, format string, args ...any) {
	fe.list = append(fe.list, FieldError{Path: path, Line: line, Msg: fmt.Sprintf(format, args...)})
}

// invalid records a validation problem; the line comes from decoding.
// A missing field points at the nearest enclosing one that was read.
func (fe *fieldErrors) invalid(path, format string, args ...any) {
	line := 0
	for p := path; p != "" && line == 0; p = fieldpath.Parent(p) {
		line = fe.lines[p]
	}
	fe.add(path, line, format, args...)
}

func (fe *fieldErrors) err() error {
	if len(fe.list) == 0 {
		return nil
	}
	return &ValidationError{Errors: fe.list}
}

// dropAfterDecode drops the validation errors (those after the first
// decodeErrs) about fields that failed to decode. Validation runs even after
// decode errors, so every problem shows in one pass; but a field that failed
// to decode holds a zero value, and a complaint about that value would only
// mislead.
func (fe *fieldErrors) dropAfterDecode(decodeErrs int) {
	bad := fe.list[:decodeErrs]
	kept := fe.list[:decodeErrs:decodeErrs]
	for _, e := range fe.list[decodeErrs:] {
		if !decodedBadly(e.Path, bad) {
			kept = append(kept, e)
		}
	}
	fe.list = kept
}

func decodedBadly(path string, decodeErrs []FieldError) bool {
	for _, fe := range decodeErrs {
		if path == fe.Path || strings.HasPrefix(path, fe.Path+".") || strings.HasPrefix(path, fe.Path+"[") {
			return true
		}
	}
	return false
}
