package logging

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/crowsnest-dev/crowsnest/internal/redact"
)

// redactHandler masks secrets (redact.String) in a record's message and
// attribute values before its handler formats them.
type redactHandler struct{ next slog.Handler }

// Redact wraps h so that no record shows a secret: the message and every
// attribute value, in groups and in attributes added with With, are
// passed through redact.String; errors, Stringers and other values are
// checked in their printed form and replaced by the masked text only when
// it differs, so values without secrets keep their structure.
func Redact(h slog.Handler) slog.Handler {
	if r, ok := h.(*redactHandler); ok {
		return r
	}
	return &redactHandler{next: h}
}

func (h *redactHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return h.next.Enabled(ctx, l)
}

func (h *redactHandler) Handle(ctx context.Context, r slog.Record) error {
	out := slog.NewRecord(r.Time, r.Level, redact.String(r.Message), r.PC)
	r.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(redactAttr(a))
		return true
	})
	return h.next.Handle(ctx, out)
}

func (h *redactHandler) WithAttrs(as []slog.Attr) slog.Handler {
	clean := make([]slog.Attr, len(as))
	for i, a := range as {
		clean[i] = redactAttr(a)
	}
	return &redactHandler{next: h.next.WithAttrs(clean)}
}

func (h *redactHandler) WithGroup(name string) slog.Handler {
	return &redactHandler{next: h.next.WithGroup(name)}
}

func redactAttr(a slog.Attr) slog.Attr {
	a.Value = redactValue(a.Value.Resolve())
	return a
}

func redactValue(v slog.Value) slog.Value {
	switch v.Kind() {
	case slog.KindString:
		s := v.String()
		if safe := redact.String(s); safe != s {
			return slog.StringValue(safe)
		}
	case slog.KindGroup:
		as := v.Group()
		clean := make([]slog.Attr, len(as))
		for i, a := range as {
			clean[i] = redactAttr(a)
		}
		return slog.GroupValue(clean...)
	case slog.KindAny:
		// The text the handlers would print: Error() or String() (fmt
		// survives a nil receiver that panics), a []byte as text, any
		// other value with its fields.
		var s string
		switch x := v.Any().(type) {
		case error, fmt.Stringer:
			s = fmt.Sprint(x)
		case []byte:
			s = string(x)
		default:
			s = fmt.Sprintf("%+v", x)
		}
		if safe := redact.String(s); safe != s {
			return slog.StringValue(safe)
		}
	}
	return v
}
