package logging

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const secret = "t0ken-S3CR3T"

// urlValuer logs a URL through slog.LogValuer.
type urlValuer string

func (u urlValuer) LogValue() slog.Value { return slog.StringValue(string(u)) }

// Every record, at every level and in both formats, is written without
// the secret wherever it shows: the message, string and error values,
// groups, With attributes, LogValuers, Stringers, []byte and structs.
func TestNewRedactsEveryRecord(t *testing.T) {
	repo := "http://bot:" + secret + "@127.0.0.1:8080/deploy.git"
	u, err := url.Parse(repo)
	if err != nil {
		t.Fatal(err)
	}
	for _, format := range []string{FormatText, FormatJSON} {
		for _, level := range []slog.Level{slog.LevelDebug, slog.LevelInfo, slog.LevelWarn, slog.LevelError} {
			t.Run(fmt.Sprintf("%s/%s", format, level), func(t *testing.T) {
				var buf bytes.Buffer
				lv := &slog.LevelVar{}
				lv.Set(slog.LevelDebug)
				l, err := New(&buf, format, lv)
				if err != nil {
					t.Fatal(err)
				}
				l = l.With("base", repo).WithGroup("g").With("in-group", repo)
				l.Log(t.Context(), level, "cloning "+repo,
					"repo", repo,
					"err", fmt.Errorf("pushing to %s: %w", repo, errors.New("refused")),
					slog.Group("nested", "url", repo, slog.Group("deeper", "token", "Authorization: Bearer "+secret)),
					"valuer", urlValuer(repo),
					"stringer", u,
					"bytes", []byte(repo),
					"struct", struct{ Repo string }{repo},
					"app", "ns/web",
				)
				out := buf.String()
				if strings.Contains(out, secret) {
					t.Errorf("the secret shows:\n%s", out)
				}
				if n := strings.Count(out, "127.0.0.1:8080"); n < 9 {
					t.Errorf("%d of the 9 masked values kept their host:\n%s", n, out)
				}
				if !strings.Contains(out, "ns/web") {
					t.Errorf("a value without secrets is lost:\n%s", out)
				}
			})
		}
	}
}

// Values without secrets keep their kind: the JSON output still has
// numbers, booleans and objects.
func TestRedactKeepsStructure(t *testing.T) {
	var buf bytes.Buffer
	l, err := New(&buf, FormatJSON, &slog.LevelVar{})
	if err != nil {
		t.Fatal(err)
	}
	l.Info("m", "n", 3, "ok", true, "obj", map[string]int{"a": 1}, slog.Group("g", "k", "v"))
	var got map[string]any
	if err := json.Unmarshal(buf.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	delete(got, "time")
	want := map[string]any{"level": "INFO", "msg": "m", "n": 3.0, "ok": true, "obj": map[string]any{"a": 1.0}, "g": map[string]any{"k": "v"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("record (-want +got):\n%s", diff)
	}
}

func TestRedactWrapsOnce(t *testing.T) {
	h := Redact(slog.NewTextHandler(&bytes.Buffer{}, nil))
	if Redact(h) != h {
		t.Error("Redact wrapped a handler twice")
	}
}
