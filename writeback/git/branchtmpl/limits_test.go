package branchtmpl

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
		{"doubling through a variable", `{{$x := "ab"}}{{$x = print $x $x}}{{$x}}`, true},
		{"printf cutting a hash", `{{.SHA256 | printf "%.8s"}}-{{printf "%s-%.12s" .AppName .SHA256}}`, false},
		{"printf with a wide width", `{{printf "%0999999d" 0}}`, true},
		{"printf with a star", `{{printf "%*d" 999999 0}}`, true},
		{"printf with a computed format", `{{printf .SHA256 0}}`, true},
		{"printf in a chain", `{{(printf "%0999999d" 0).X}}`, true},
		{"nested text builders", `{{urlquery (urlquery (urlquery .SHA256))}}`, true},
		{"with declaring a variable", `{{with $x := .SHA256}}{{$x}}{{end}}`, true},
		{"comparisons and picks", `{{if eq (len .Images) 1}}{{(index .Images 0).NewTag}}{{end}}`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse(tt.text)
			switch {
			case tt.refused && !errors.Is(err, ErrOutsideLimits):
				t.Errorf("Parse(%q) = %v, want ErrOutsideLimits", tt.text, err)
			case !tt.refused && err != nil:
				t.Errorf("Parse(%q) = %v", tt.text, err)
			}
		})
	}
}

// Render caps the output at maxBranchBytes and trims it.
func TestRenderLimits(t *testing.T) {
	type image struct{ NewTag string }
	data := struct {
		SHA256 string
		Images []image
	}{SHA256: strings.Repeat("a", 64), Images: []image{{NewTag: "1.0.0"}}}
	long, err := Parse(strings.Repeat("{{.SHA256}}", 20))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Render(long, data); !errors.Is(err, ErrOutsideLimits) || !strings.Contains(err.Error(), "longer than") {
		t.Errorf("a 1280-byte branch rendered with error %v, want the length limit", err)
	}
	ranged, err := Parse(" updates-{{range .Images}}{{.NewTag}}{{end}} ")
	if err != nil {
		t.Fatal(err)
	}
	if got, err := Render(ranged, data); err != nil || got != "updates-1.0.0" {
		t.Errorf("Render = %q, %v; want updates-1.0.0", got, err)
	}
}
