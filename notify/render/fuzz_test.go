package render_test

import (
	"strings"
	"testing"
	"time"

	"github.com/crowsnest-dev/crowsnest/notify"

	"github.com/crowsnest-dev/crowsnest/notify/render"
)

// FuzzRender feeds arbitrary template text through Compile and Render: no
// panic, no "<no value>" leaking from a missing field, the size bound held.
func FuzzRender(f *testing.F) {
	for _, s := range []string{
		"{{.app.metadata.name}}",
		"{{.app.status.operationState.syncResult.revision}}",
		`{{range $i, $img := .app.status.images}}{{$i}}={{$img | upper}} {{end}}`,
		`{{if eq .app.status.sync.status "Synced"}}ok{{else if .x.y}}maybe{{end}}`,
		`{{with .app.spec}}{{.source.repoURL | repoURLToHTTPS}}{{end}}`,
		`{{define "x"}}{{.a.b}}{{end}}{{template "x" .app}}`,
		`{{$v := .app.missing}}{{$v.deeper}}{{$.app.metadata.name}}`,
		`{{call .repo.FullNameByRepoURL .app.spec.source.repoURL}}`,
		`{{toJson .}}{{b64dec "!!"}}`,
		`{{(.app).metadata}}{{printf "%v" .app.nope}}`,
		`{{truncate 3 (default "x" .n)}}{{dict "a"}}`,
		// sprig-style helpers, including the bounded and error paths
		`{{$d := dict "a" 1}}{{$_ := set $d "b" (list 1 2)}}{{toYaml $d}}{{dig "b" "x" $d}}`,
		`{{regexReplaceAll "(o+)" .app.metadata.name "<$1>"}}{{regexMatch "[" "x"}}`,
		`{{range until 3}}{{seq 1 2 5}}{{end}}{{untilStep 0 9 4}}{{repeat 3 "ab"}}`,
		`{{(split "-" "a-b")._1}}{{splitList "/" .app.spec.source.repoURL | last}}`,
		`{{$j := fromJson "{\"a\":[1,{\"b\":2}]}"}}{{$j.a}}{{pluck "b" $j}}{{keys $j | sortAlpha}}`,
		`{{add 1 2.5 "3"}}{{div 7 .app.nope}}{{max 1 2}}{{int64 "9"}}`,
		`{{dateInZone "15:04" now "Asia/Tokyo"}}{{durationRound "49h"}}{{ago .app.metadata.creationTimestamp}}`,
		`{{abbrev 6 (cat "a" "bcdefgh")}}{{substr 1 3 "hello"}}{{plural "x" "xs" 2}}{{required "r" ""}}`,
		// the render budget and the checks on shared values
		`{{range 1000000}}{{range until 3}}{{.}}{{end}}{{end}}`,
		`{{$l := list 1}}{{range until 40}}{{$l = list $l $l}}{{end}}{{toJson $l}}{{$l}}`,
		`{{define "a"}}{{template "b" .}}{{end}}{{define "b"}}{{printf "%9[1]d" .}}{{end}}{{template "a" 1}}`,
	} {
		f.Add(s)
	}
	vars := appVars()
	clock := render.WithClock(func() time.Time { return fixedNow })
	f.Fuzz(func(t *testing.T, text string) {
		c, err := render.Compile(notify.Template{Name: "fuzz", Message: text, Email: &notify.EmailTemplate{Subject: text}}, clock)
		if err != nil {
			if !strings.Contains(err.Error(), `template "fuzz"`) {
				t.Fatalf("compile error does not name the template: %v", err)
			}
			return
		}
		n, err := c.Render(vars)
		if err != nil {
			if !strings.Contains(err.Error(), `template "fuzz"`) {
				t.Fatalf("render error does not name the template: %v", err)
			}
			return
		}
		if len(n.Message) > render.MaxFieldSize {
			t.Fatalf("rendered %d bytes, over the %d limit", len(n.Message), render.MaxFieldSize)
		}
		if strings.Contains(n.Message, "<no value>") && !strings.Contains(text, "<no value>") && !strings.Contains(text, "printf") && !strings.Contains(text, "print") {
			t.Fatalf("rendered %q from %q: a missing value leaked", n.Message, text)
		}
	})
}
