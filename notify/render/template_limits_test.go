package render_test

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/crowsnest-dev/crowsnest/notify"

	"github.com/crowsnest-dev/crowsnest/notify/render"
)

// fanOut defines templates t0 ... t<levels>, each calling the one below
// twice: 2^levels calls from a text that grows linearly.
func fanOut(levels int) string {
	var b strings.Builder
	b.WriteString(`{{define "t0"}}x{{end}}`)
	for i := 1; i <= levels; i++ {
		fmt.Fprintf(&b, `{{define "t%d"}}{{template "t%d"}}{{template "t%d"}}{{end}}`, i, i-1, i-1)
	}
	fmt.Fprintf(&b, `{{template "t%d"}}`, levels)
	return b.String()
}

// doubled is a template prefix that builds $l, a list holding itself
// twice, 60 times over: 2^60 elements when printed, 61 lists in memory.
const doubled = `{{$l := list 1}}{{range until 60}}{{$l = list $l $l}}{{end}}`

const mib1 = `(repeat 10000 (repeat 100 "x"))` // a 1,000,000-byte string

// hostileTemplates would each burn seconds of CPU or hundreds of MiB (or
// never end) without the render budget and the helpers' own limits. Each
// fails with an error naming the limit.
var hostileTemplates = []struct {
	name    string
	text    string
	wantErr string
}{
	{name: "range over a big int", text: `{{range 1000000000}}{{end}}`, wantErr: "more than 200000 steps"},
	{name: "nested ranges", text: `{{range until 10000}}{{range until 10000}}{{end}}{{end}}`, wantErr: "more than 200000 steps"},
	{name: "helper calls in nested ranges", text: `{{range 10000}}{{range 10000}}{{$x := upper "a"}}{{end}}{{end}}`, wantErr: "more than 200000 steps"},
	{name: "templates that fan out", text: fanOut(40), wantErr: "more than 200000 steps"},
	{name: "a template calling itself", text: `{{define "a"}}{{template "a" .}}{{end}}{{template "a" .}}`, wantErr: `template "a" calls itself`},
	{name: "templates calling each other", text: `{{define "a"}}{{template "b"}}{{end}}{{define "b"}}{{template "a"}}{{end}}{{template "a"}}`, wantErr: "calls itself, directly or through other templates"},
	{name: "repeat count", text: `{{repeat 100000000 "x" | len}}`, wantErr: "repeat count 100000000 out of range 0..10000"},
	{name: "a dict of big strings", text: `{{$s := ` + mib1 + `}}{{$d := dict}}{{range $i := until 10000}}{{$_ := set $d (toString $i) (print $s $i)}}{{end}}`, wantErr: "helpers took and returned more than 32 MiB"},
	{name: "a big string searched again and again", text: `{{$s := ` + mib1 + `}}{{range until 10000}}{{if regexMatch "y$" $s}}{{end}}{{end}}`, wantErr: "helpers took and returned more than 32 MiB"},
	{name: "a list growing by append", text: `{{$l := list}}{{range until 10000}}{{$l = append $l .}}{{end}}`, wantErr: "helpers took and returned more than 32 MiB"},
	{name: "a doubled list encoded", text: doubled + `{{toJson $l}}`, wantErr: "toJson: argument 1 would print to more than 1048576 bytes"},
	{name: "a doubled list printed", text: doubled + `{{$l}}`, wantErr: "the value would print to more than 1048576 bytes"},
	{name: "a doubled dict printed", text: `{{$d := dict}}{{range until 60}}{{$d = dict "a" $d "b" $d}}{{end}}{{$d}}`, wantErr: "the value would print to more than 1048576 bytes"},
	{name: "a doubled list joined", text: doubled + `{{join "," $l}}`, wantErr: "join: argument 2 would print"},
	{name: "a doubled list sorted", text: doubled + `{{sortAlpha $l}}`, wantErr: "sortAlpha: argument 1 would print"},
	{name: "a doubled list upper-cased", text: doubled + `{{upper $l}}`, wantErr: "upper: argument 1 would print"},
	{name: "a doubled list in printf", text: doubled + `{{printf "%v" $l}}`, wantErr: "printf: argument 2 would print"},
	{name: "a doubled list in the html builtin", text: doubled + `{{html $l}}`, wantErr: "html: argument 1 would print"},
	{name: "a doubled list in the js builtin", text: doubled + `{{js $l}}`, wantErr: "js: argument 1 would print"},
	{name: "a doubled list as a dict key", text: doubled + `{{dict $l 1}}`, wantErr: "dict: key 1 is a []interface {}, want a string"},
	{name: "printf widths", text: `{{printf "` + strings.Repeat("%999999[1]d", 100) + `" 1}}`, wantErr: "printf: the widths and precisions in the format add up to more than 1048576 bytes"},
	{name: "splitList between every character", text: `{{splitList "" ` + mib1 + ` | len}}`, wantErr: "splitList: list of 1000000 elements is over the 10000-element limit"},
	{name: "split between every character", text: `{{split "" ` + mib1 + ` | len}}`, wantErr: "split: list of 1000000 elements is over the 10000-element limit"},
	{name: "regexReplaceAll expanding a long match", text: `{{regexReplaceAll ".+" ` + mib1 + ` (repeat 1000 "${0}")}}`, wantErr: "regexReplaceAll: result of 1000000000 bytes is over the 1048576-byte limit"},
	{name: "regexReplaceAll with many matches", text: `{{regexReplaceAll "x" ` + mib1 + ` ""}}`, wantErr: "regexReplaceAll: more than 131072 matches of a pattern with 0 groups and a replacement of 0 parts"},
	{name: "regexReplaceAll with a long replacement", text: `{{regexReplaceAll "" ` + mib1 + ` (repeat 500 "$0")}}`, wantErr: "regexReplaceAll: more than 524 matches of a pattern with 0 groups and a replacement of 500 parts"},
	{name: "uniq of many lists", text: `{{$d := dict}}{{range $i := until 10000}}{{$_ := set $d (toString $i) (list $i)}}{{end}}{{uniq (values $d) | len}}`, wantErr: "uniq: more than 1000000 comparisons of lists or dicts"},
}

// Each hostile template fails with an error naming its limit, wrapping
// ErrBudget when the budget is what ran out, and allocates well
// under 64 MiB on the way (more under the race detector: raceAllocFactor).
func TestHostileTemplatesAreBounded(t *testing.T) {
	for _, tt := range hostileTemplates {
		t.Run(tt.name, func(t *testing.T) {
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			_, err := render.Once(notify.Template{Name: "t", Message: tt.text}, appVars())
			runtime.ReadMemStats(&after)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("error = %v, want one containing %q", err, tt.wantErr)
			}
			if strings.Contains(tt.wantErr, "more than 200000 steps") || strings.Contains(tt.wantErr, "more than 32 MiB") {
				if !errors.Is(err, render.ErrBudget) {
					t.Errorf("error %v is not ErrBudget", err)
				}
			}
			if alloc, most := after.TotalAlloc-before.TotalAlloc, uint64(64<<20*raceAllocFactor); alloc > most {
				t.Errorf("the render allocated %d MiB, want under %d MiB", alloc>>20, most>>20)
			}
		})
	}
}

// The budget is shared by all fields of one Render: ranges that each stay
// under it in their own field still add up.
func TestRenderBudgetCoversAllFields(t *testing.T) {
	loop := `{{range 150000}}{{end}}`
	if _, err := render.Once(notify.Template{Name: "t", Message: loop}, appVars()); err != nil {
		t.Fatalf("one field: %v", err)
	}
	_, err := render.Once(notify.Template{Name: "t", Message: loop, Email: &notify.EmailTemplate{Subject: loop}}, appVars())
	if !errors.Is(err, render.ErrBudget) || !strings.Contains(err.Error(), "email.subject") {
		t.Fatalf("two fields: error = %v, want ErrBudget in email.subject", err)
	}
	// A new Render has a budget of its own.
	c, err := render.Compile(notify.Template{Name: "t", Message: loop})
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if _, err := c.Render(appVars()); err != nil {
			t.Fatal(err)
		}
	}
}

// Values that hold the same parts many times cost their distinct parts
// where nothing is printed: set's check that a dict does not end up
// holding itself, uniq, has and len look through a list doubled sixty
// times at once. It is still refused where it would be printed.
func TestSharedPartsAreWalkedOnce(t *testing.T) {
	text := doubled + `{{$d := dict}}{{$_ := set $d "k" $l}}`
	checkRender(t, text+`{{len (uniq (list $l $l))}} {{has $l (list $l)}} {{len $l}}`, appVars(), "1 true 2", "")
	checkRender(t, text+`{{$d}}`, appVars(), "", "the value would print to more than")
	checkRender(t, text+`{{$_ := set $d "j" (list $l $d)}}`, appVars(), "", `set: the value of "j" contains the dict itself`)
}

// resourcesVars is appVars with an Application of n resources.
func resourcesVars(n int) map[string]any {
	v := appVars()
	res := make([]any, n)
	for i := range res {
		res[i] = map[string]any{"group": "apps", "version": "v1", "kind": "Deployment", "namespace": "shop",
			"name": fmt.Sprintf("web-%d", i), "status": "Synced", "health": map[string]any{"status": "Healthy"}}
	}
	v["app"].(map[string]any)["status"].(map[string]any)["resources"] = res
	return v
}

// resourcesTemplate lists every resource, as a detailed sync-status
// template might.
const resourcesTemplate = `{{range $i, $r := .app.status.resources}}{{if $i}}, {{end}}` +
	`{{$r.kind | lower}}/{{$r.name | trunc 63}} {{default "Unknown" $r.health.status}}{{end}}`

// A real template over a big Application stays well within the budget:
// 5,000 resources with a few helpers each, and the whole Application
// encoded.
func TestRealTemplatesFitTheBudget(t *testing.T) {
	vars := resourcesVars(5000)
	n, err := render.Once(notify.Template{Name: "t", Message: resourcesTemplate + `{{toJson .app | len | printf " %d"}}`}, vars)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := strings.Count(n.Message, "deployment/web-"), 5000; got != want {
		t.Errorf("%d resources listed, want %d", got, want)
	}
	if !strings.HasSuffix(n.Message, "web-4999 Healthy 684188") {
		t.Errorf("rendered ...%s, want the resources and the length of the Application's JSON", n.Message[len(n.Message)-40:])
	}
}

// BenchmarkRenderBudget renders the costliest hostile templates to the
// point where they fail: what one hostile notification can cost.
func BenchmarkRenderBudget(b *testing.B) {
	for _, name := range []string{"range over a big int", "helper calls in nested ranges", "templates that fan out", "a dict of big strings", "a big string searched again and again"} {
		var text string
		for _, tt := range hostileTemplates {
			if tt.name == name {
				text = tt.text
			}
		}
		b.Run(name, func(b *testing.B) {
			c, err := render.Compile(notify.Template{Name: "t", Message: text}, render.WithClock(time.Now))
			if err != nil {
				b.Fatal(err)
			}
			vars := appVars()
			b.ReportAllocs()
			for b.Loop() {
				if _, err := c.Render(vars); !errors.Is(err, render.ErrBudget) {
					b.Fatal(err)
				}
			}
		})
	}
}
