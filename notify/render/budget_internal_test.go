package render

import (
	"fmt"
	"strings"
	"testing"

	"github.com/crowsnest-dev/crowsnest/notify"
)

// padding counts what fmt pads to: widths and precisions, with argument
// indexes and flags skipped and fmt's own cap on each.
func TestPadding(t *testing.T) {
	tests := []struct {
		format string
		want   int
	}{
		{"no verbs, 123456789 digits", 0},
		{"%d %s %v %%", 0},
		{"%d then 123456789 and %s 42", 0},
		{"%5d|%-10s|%.3f|%8.2f", 5 + 10 + 3 + 8 + 2},
		{"%[2]d %[1]5s %+08d % x %#x", 5 + 8},
		{"%*d %.*s", 2_000_000},
		{"%99999999999999999999d", 1_000_000},
		{strings.Repeat("%999999[1]d", 3), 2_999_997},
		{"trailing %", 0},
		{"%[1", 0},
	}
	for _, tt := range tests {
		if got := padding(tt.format); got != tt.want {
			t.Errorf("padding(%q) = %d, want %d", tt.format, got, tt.want)
		}
	}
}

// A template listing 5,000 resources, a few helpers each, uses a fraction
// of the budget; the margin is what lets real templates never meet it.
func TestBudgetUseOfARealTemplate(t *testing.T) {
	res := make([]any, 5000)
	for i := range res {
		res[i] = map[string]any{"kind": "Deployment", "name": fmt.Sprintf("web-%d", i), "health": map[string]any{"status": "Healthy"}}
	}
	vars := map[string]any{"app": map[string]any{"status": map[string]any{"resources": res}}}
	c, err := Compile(notify.Template{Name: "t", Message: `{{range $i, $r := .app.status.resources}}{{if $i}}, {{end}}` +
		`{{$r.kind | lower}}/{{$r.name | trunc 63}} {{default "Unknown" $r.health.status}}{{end}}`})
	if err != nil {
		t.Fatal(err)
	}
	bd, err := c.bind()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.render(vars, bd); err != nil {
		t.Fatal(err)
	}
	stepsLeft, bytesLeft := bd.budget.Left()
	steps, bytes := maxRenderSteps-stepsLeft, maxRenderBytes-bytesLeft
	t.Logf("%d steps, %d bytes", steps, bytes)
	if steps > maxRenderSteps/2 || bytes > maxRenderBytes/8 {
		t.Errorf("used %d of %d steps and %d of %d bytes, want at most half the steps and an eighth of the bytes",
			steps, maxRenderSteps, bytes, maxRenderBytes)
	}
}
