package logging

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"

	"k8s.io/klog/v2"
)

func TestNewFormatsAndLevel(t *testing.T) {
	tests := []struct {
		name    string
		format  string
		wantErr bool
	}{
		{name: "text", format: FormatText},
		{name: "json", format: FormatJSON},
		{name: "default is text", format: ""},
		{name: "unknown", format: "yaml", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			level := &slog.LevelVar{}
			l, err := New(&buf, tt.format, level)
			if (err != nil) != tt.wantErr {
				t.Fatalf("New() error = %v, wantErr %v", err, tt.wantErr)
			}
			if err != nil {
				return
			}
			l.Debug("hidden")
			level.Set(slog.LevelDebug)
			l.Debug("shown", "app", "ns/a")
			out := buf.String()
			if strings.Contains(out, "hidden") || !strings.Contains(out, "shown") {
				t.Errorf("level not applied live: %q", out)
			}
			if tt.format == FormatJSON {
				var rec map[string]any
				if err := json.Unmarshal([]byte(strings.TrimSpace(out)), &rec); err != nil || rec["app"] != "ns/a" {
					t.Errorf("not one JSON record with app key: %q (%v)", out, err)
				}
			}
		})
	}
}

func TestParseLevel(t *testing.T) {
	for _, s := range []string{"debug", "INFO", "warn", "error"} {
		if _, err := ParseLevel(s); err != nil {
			t.Errorf("ParseLevel(%q) = %v", s, err)
		}
	}
	if _, err := ParseLevel("loud"); err == nil || !strings.Contains(err.Error(), `"loud"`) {
		t.Errorf("ParseLevel(loud) error = %v, want one naming the value", err)
	}
}

func TestRouteKlog(t *testing.T) {
	var buf bytes.Buffer
	l, err := New(&buf, FormatJSON, &slog.LevelVar{})
	if err != nil {
		t.Fatal(err)
	}
	RouteKlog(l)
	t.Cleanup(func() { klog.SetSlogLogger(slog.New(slog.NewTextHandler(&bytes.Buffer{}, nil))) })
	klog.InfoS("from klog", "k", "v", "url", "https://u:"+secret+"@api.example.com/?access_token="+secret)
	klog.Flush()
	if !strings.Contains(buf.String(), `"msg":"from klog"`) || !strings.Contains(buf.String(), `"source":"client-go"`) {
		t.Errorf("klog output not routed into slog: %q", buf.String())
	}
	if strings.Contains(buf.String(), secret) || !strings.Contains(buf.String(), "api.example.com") {
		t.Errorf("klog line not redacted: %q", buf.String())
	}
}
