package branchtmpl

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// CheckName follows git check-ref-format --branch: argocd-image-updater's
// usual branches pass, and each rule refuses with the rule's name.
func TestCheckName(t *testing.T) {
	tests := []struct {
		name string
		want string // "" accepted; else a part of the error
	}{
		{"main", ""},
		{"HEAD", ""},
		{"release/1.x", ""},
		{"image-updater-0a1b2c", ""},
		{"feature/üñí", ""},
		{"", "empty"},
		{"a..b", `".."`},
		{"1.*", `'*'`},
		{"has space", `' '`},
		{"tab\tx", `'\t'`},
		{"a~1", `'~'`},
		{"a^1", `'^'`},
		{"a:b", `':'`},
		{"a?", `'?'`},
		{"a[1]", `'['`},
		{`a\b`, `'\\'`},
		{"del\x7f", `'\x7f'`},
		{"-rf", `starts with "-"`},
		{"/main", `"/"`},
		{"main/", `"/"`},
		{"a//b", "empty path component"},
		{"main.", `ends with "."`},
		{".hidden", `starts with "."`},
		{"x/.hidden", `starts with "."`},
		{"main.lock", `".lock"`},
		{"x.lock/y", `".lock"`},
		{"a@{1}", `"@{"`},
		{"@", `"@" alone`},
		{"bad\xffutf8", "not UTF-8"},
		{strings.Repeat("a", 1025), "longer than 1024"},
	}
	for _, tt := range tests {
		err := CheckName(tt.name)
		got := ""
		if err != nil {
			got = tt.want
			if !errors.Is(err, ErrInvalidBranch) || !strings.Contains(err.Error(), tt.want) {
				got = err.Error()
			}
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("CheckName(%q) (-want +got):\n%s", tt.name, diff)
		}
	}
	if err := CheckName(strings.Repeat("a", 1025)); len(err.Error()) > 200 {
		t.Errorf("the error quotes %d bytes of a long name", len(err.Error()))
	}
}

// CheckTarget parses a template (its output is checked once rendered)
// and checks anything else as a name.
func TestCheckTarget(t *testing.T) {
	tests := []struct {
		target  string
		wantErr error
	}{
		{"image-updater-{{.SHA256}}", nil},
		{"updates", nil},
		{"up..dates", ErrInvalidBranch},
		{"x-{{range 1000000000}}{{end}}", ErrOutsideLimits},
	}
	for _, tt := range tests {
		if err := CheckTarget(tt.target); !errors.Is(err, tt.wantErr) || (tt.wantErr == nil) != (err == nil) {
			t.Errorf("CheckTarget(%q) = %v, want %v", tt.target, err, tt.wantErr)
		}
	}
	if err := CheckTarget("x-{{.Foo"); err == nil || !strings.Contains(err.Error(), "parsing branch template") {
		t.Errorf("an unclosed action: %v", err)
	}
}
