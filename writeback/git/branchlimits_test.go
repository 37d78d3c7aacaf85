package git

import (
	"errors"
	"strings"
	"testing"
)

// Branch templates come from annotations: argocd-image-updater's
// documented forms parse, anything that could loop or fan out does not,
// and output past maxBranchBytes fails the render.
func TestBranchTemplateLimits(t *testing.T) {
	tests := []struct {
		name, text string
		refused    bool
	}{
		{"SHA256", "image-updater-{{.SHA256}}", false},
		{"range over images", "updates-{{range .Images}}{{.Name}}-{{.NewTag}}{{end}}", false},
		{"range over $.Images with else", "u-{{range $i := $.Images}}{{$i.Name}}{{else}}none{{end}}", false},
		{"if and with", "{{if .AppName}}{{with .SHA256}}{{sha256 .}}{{end}}{{end}}", false},
		{"range over a number", "x-{{range 1000000000}}{{end}}", true},
		{"range over a function's result", `x-{{range (len "abc")}}{{end}}`, true},
		{"range over a variable", "{{$n := 1000000000}}{{range $n}}{{end}}", true},
		{"nested range", "{{range .Images}}{{range $.Images}}{{end}}{{end}}", true},
		{"range inside if inside range", "{{range .Images}}{{if true}}{{range $.Images}}{{end}}{{end}}{{end}}", true},
		{"define", `{{define "x"}}a{{end}}b`, true},
		{"template call", `{{template "branch" .}}`, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseBranchTemplate(tt.text)
			switch {
			case tt.refused && !errors.Is(err, ErrBranchTemplate):
				t.Errorf("ParseBranchTemplate(%q) = %v, want ErrBranchTemplate", tt.text, err)
			case !tt.refused && err != nil:
				t.Errorf("ParseBranchTemplate(%q) = %v", tt.text, err)
			}
		})
	}
	c := &Change{App: "web", Images: []Image{{Name: "ghcr.io/a/web", NewTag: "1.0.0"}}}
	if _, _, err := splitBranch(`main:{{printf "%0900d" 1}}{{printf "%0900d" 2}}`, c); !errors.Is(err, ErrBranchTemplate) || !strings.Contains(err.Error(), "longer than") {
		t.Errorf("a 1800-byte branch rendered with error %v, want the length limit", err)
	}
	if base, target, err := splitBranch("main:updates-{{range .Images}}{{.NewTag}}{{end}}", c); err != nil || base != "main" || target != "updates-1.0.0" {
		t.Errorf("splitBranch = %q, %q, %v; want main, updates-1.0.0", base, target, err)
	}
}
