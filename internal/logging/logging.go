// Package logging builds crowsnest's one structured logger (log/slog, text
// or JSON), which masks secrets in every record (internal/redact), and
// routes client-go's klog output into it.
package logging

import (
	"fmt"
	"io"
	"log/slog"
	"strings"

	"k8s.io/klog/v2"
)

// Formats of the log output.
const (
	FormatText = "text"
	FormatJSON = "json"
)

// ParseLevel reads debug, info, warn or error.
func ParseLevel(s string) (slog.Level, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(strings.ToLower(s))); err != nil {
		return 0, fmt.Errorf("invalid log level %q: want debug, info, warn or error", s)
	}
	return l, nil
}

// New returns a logger writing to w in format, whose level is read from
// level on every call, so a config reload can change it in place. Every
// record, at every level, passes through Redact.
func New(w io.Writer, format string, level *slog.LevelVar) (*slog.Logger, error) {
	opts := &slog.HandlerOptions{Level: level}
	var h slog.Handler
	switch format {
	case FormatText, "":
		h = slog.NewTextHandler(w, opts)
	case FormatJSON:
		h = slog.NewJSONHandler(w, opts)
	default:
		return nil, fmt.Errorf("invalid log format %q: want text or json", format)
	}
	return slog.New(Redact(h)), nil
}

// RouteKlog sends klog's output (client-go, leader election, informers)
// into logger, so the process writes one format.
func RouteKlog(logger *slog.Logger) {
	klog.SetSlogLogger(logger.With("source", "client-go"))
}
