package redact

import "strings"

// rewritten is an error whose text was changed; errors.Is and errors.As
// still see the original.
type rewritten struct {
	msg string
	err error
}

func (e *rewritten) Error() string { return e.msg }
func (e *rewritten) Unwrap() error { return e.err }

// Error returns err with its text passed through String, for errors that
// leave the process (an Event, a notification, the CLI's output); errors.Is
// and errors.As still see err. nil and errors without secrets come back
// as they are.
func Error(err error) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	if safe := String(msg); safe != msg {
		return &rewritten{msg: safe, err: err}
	}
	return err
}

// Rewrite returns err with the text of every error in its tree that safe
// recognizes replaced by what safe says instead: a subsystem's one place
// to say a remote server's status without the body of its answer (which
// a remote chosen by an annotation could fill with what it likes).
// Recognized errors are not looked into. When a wrapper reformatted a
// recognized error's text instead of including it, the whole text is
// only what safe said, so nothing of the answer can remain. errors.Is and
// errors.As still see err.
func Rewrite(err error, safe func(error) (string, bool)) error {
	if err == nil {
		return nil
	}
	type swap struct{ from, to string }
	var swaps []swap
	walk(err, func(e error) bool {
		to, ok := safe(e)
		if ok {
			if from := e.Error(); from != to {
				swaps = append(swaps, swap{from, to})
			}
		}
		return !ok
	})
	if len(swaps) == 0 {
		return err
	}
	msg := err.Error()
	var lost []string
	for _, s := range swaps {
		if s.from == "" || !strings.Contains(msg, s.from) {
			lost = append(lost, s.to)
			continue
		}
		msg = strings.ReplaceAll(msg, s.from, s.to)
	}
	if len(lost) > 0 {
		msg = strings.Join(lost, "; ")
	}
	return &rewritten{msg: msg, err: err}
}

// walk visits err's tree depth first, going into an error's wrapped
// errors while visit returns true.
func walk(err error, visit func(error) bool) {
	if err == nil || !visit(err) {
		return
	}
	switch u := err.(type) { //nolint:errorlint // walks the chain itself, one node at a time
	case interface{ Unwrap() error }:
		walk(u.Unwrap(), visit)
	case interface{ Unwrap() []error }:
		for _, e := range u.Unwrap() {
			walk(e, visit)
		}
	}
}
