package render_test

import (
	"strings"
	"testing"
	"text/template"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/crowsnest-dev/crowsnest/config"
	"github.com/crowsnest-dev/crowsnest/notify"
	"github.com/crowsnest-dev/crowsnest/notify/render"
)

var fixedNow = time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)

func appVars() map[string]any {
	return map[string]any{
		"app": map[string]any{
			"metadata": map[string]any{"name": "guestbook", "namespace": "argocd", "creationTimestamp": "2026-11-23T09:00:00Z"},
			"spec":     map[string]any{"source": map[string]any{"repoURL": "git@github.com:org/guestbook.git"}},
			"status": map[string]any{
				"sync":   map[string]any{"status": "Synced", "revision": "abc123"},
				"health": map[string]any{"status": "Healthy"},
				"images": []any{"nginx:1.27", "redis:7"},
			},
		},
		"context": map[string]any{"argocdUrl": "https://argocd.example.com"},
		"repo":    render.RepoHelpers(),
	}
}

func TestRender(t *testing.T) {
	tests := []struct {
		name    string
		text    string
		want    string
		wantErr string
	}{
		{name: "field", text: "{{.app.metadata.name}} is {{.app.status.sync.status}}", want: "guestbook is Synced"},
		{name: "missing field is empty", text: "[{{.app.status.operationState.message}}]", want: "[]"},
		{name: "missing top-level", text: "[{{.nothing}}]", want: "[]"},
		{name: "missing in function", text: "[{{upper .app.status.operationState.phase}}]", want: "[]"},
		{name: "missing piped", text: "[{{.app.nope.deeper | upper}}]", want: "[]"},
		{name: "missing in if", text: "{{if .app.status.operationState.phase}}yes{{else}}no{{end}}", want: "no"},
		{name: "eq on missing", text: `{{if eq .app.status.operationState.phase "Failed"}}bad{{else}}ok{{end}}`, want: "ok"},
		{name: "default", text: `{{default "none" .app.status.operationState.phase}}`, want: "none"},
		{name: "variable chain", text: `{{$a := .app}}{{$a.metadata.namespace}}/{{$a.metadata.missing}}.`, want: "argocd/."},
		{name: "range", text: `{{range .app.status.images}}[{{.}}]{{end}}`, want: "[nginx:1.27][redis:7]"},
		{name: "range over missing", text: `{{range .app.status.nope}}x{{else}}none{{end}}`, want: "none"},
		{name: "index", text: `{{index .app.metadata "name"}} {{index .app.status.images 1}}`, want: "guestbook redis:7"},
		{name: "template with missing", text: `{{define "t"}}<{{.name}}>{{end}}{{template "t" .app.nope}}{{template "t" .app.metadata}}`, want: "<><guestbook>"},
		{name: "with", text: `{{with .app.status.health}}{{.status}}{{end}}`, want: "Healthy"},
		{name: "root var", text: `{{range .app.status.images}}{{$.app.metadata.name}} {{end}}`, want: "guestbook guestbook "},
		{name: "string helpers", text: `{{lower "AB"}} {{title "hello world"}} {{trim "  x "}} {{replace "-" "_" "a-b"}} {{join "," (splitList "/" "a/b/c")}}`, want: "ab Hello World x a_b a,b,c"},
		{name: "truncate", text: `{{truncate 5 "abcdefgh"}} {{truncate -2 "abcdefgh"}}`, want: "abcde gh"},
		{name: "toJson", text: `{{toJson .app.status.health}} {{quote "a\"b"}}`, want: `{"status":"Healthy"} "a\"b"`},
		{name: "b64 and sha", text: `{{b64enc "hi"}} {{sha256sum "hi" | truncate 8}}`, want: "aGk= 8f434346"},
		{name: "now and date", text: `{{now | date "2006-01-02 15:04"}} {{dateRFC3339 .app.metadata.creationTimestamp}} {{ago .app.metadata.creationTimestamp}}`, want: "2026-11-23 10:00 2026-11-23T09:00:00Z 1h0m0s"},
		{name: "repo helpers", text: `{{call .repo.RepoURLToHTTPS .app.spec.source.repoURL}} {{repoFullName .app.spec.source.repoURL}}`, want: "https://github.com/org/guestbook org/guestbook"},
		{name: "dict and keys", text: `{{keys (dict "b" 1 "a" 2)}} {{first .app.status.images}} {{last .app.status.images}}`, want: "[a b] nginx:1.27 redis:7"},
		{name: "no env access", text: `{{env "HOME"}}`, wantErr: `function "env" not defined`},
		{name: "execution error names field", text: `{{repeat 99999999 "x"}}`, wantErr: `rendering template "t": message: template: message:1:2: executing "message" at <repeat 99999999 "x">: error calling repeat: repeat count 99999999 out of range`},
		{name: "size bound", text: `{{range .app.status.images}}{{repeat 10000 "xxxxxxxxxx"}}{{repeat 10000 "xxxxxxxxxxx"}}{{repeat 10000 "xxxxxxxxxxx"}}{{end}}`, wantErr: "exceeds the size limit"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkRender(t, tt.text, appVars(), tt.want, tt.wantErr)
		})
	}
}

func TestRenderServices(t *testing.T) {
	tmpl := notify.Template{
		Name:    "app-synced",
		Message: "{{.app.metadata.name}} synced",
		Slack: &notify.SlackTemplate{
			Blocks:          `[{"type":"section","text":{"type":"mrkdwn","text":"{{.app.metadata.name}}"}}]`,
			GroupingKey:     "{{.app.metadata.name}}-{{.app.status.sync.revision}}",
			NotifyBroadcast: true,
			DeliveryPolicy:  notify.PolicyPostAndUpdate,
		},
		Webhook: map[string]notify.WebhookTemplate{
			"github": {Method: "POST", Path: "/repos/{{repoFullName .app.spec.source.repoURL}}/statuses/{{.app.status.sync.revision}}", Body: `{"state":"success"}`},
		},
		Email: &notify.EmailTemplate{Subject: "{{.app.metadata.name}} is {{.app.status.health.status}}"},
	}
	got, err := render.Once(tmpl, appVars())
	if err != nil {
		t.Fatal(err)
	}
	want := notify.Notification{
		Message: "guestbook synced",
		Slack: &notify.SlackTemplate{
			Blocks:          `[{"type":"section","text":{"type":"mrkdwn","text":"guestbook"}}]`,
			GroupingKey:     "guestbook-abc123",
			NotifyBroadcast: true,
			DeliveryPolicy:  notify.PolicyPostAndUpdate,
		},
		Webhook: map[string]notify.WebhookTemplate{"github": {Method: "POST", Path: "/repos/org/guestbook/statuses/abc123", Body: `{"state":"success"}`}},
		Email:   &notify.EmailTemplate{Subject: "guestbook is Healthy"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("notification (-want +got):\n%s", diff)
	}
}

func TestCompileErrors(t *testing.T) {
	tests := []struct {
		name    string
		tmpl    notify.Template
		wantErr string
	}{
		{name: "message", tmpl: notify.Template{Name: "a", Message: "{{.x"}, wantErr: `template "a": message: `},
		{name: "webhook", tmpl: notify.Template{Name: "b", Webhook: map[string]notify.WebhookTemplate{"gh": {Body: "{{end}}"}}}, wantErr: `template "b": webhook.gh.body: `},
		{name: "policy", tmpl: notify.Template{Name: "c", Slack: &notify.SlackTemplate{DeliveryPolicy: "Sometimes"}}, wantErr: `template "c": slack.deliveryPolicy: "Sometimes"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := render.Compile(tt.tmpl)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("error = %v, want one containing %q", err, tt.wantErr)
			}
		})
	}
	_, err := render.Once(notify.Template{Name: "d", Slack: &notify.SlackTemplate{Blocks: "[{{.app.metadata.name}}"}}, appVars())
	if err == nil || !strings.Contains(err.Error(), `template "d": slack.blocks: not valid JSON`) {
		t.Fatalf("error = %v, want invalid JSON for slack.blocks", err)
	}
}

// TestFuncNamesMatchFuncMap: config checks templates against
// config.TemplateFuncNames and FuncMap renders them, so the two must be the
// same set, both ways: a name config accepts that notify lacks would fail
// only at render, and one notify has that config lacks would be rejected
// at load.
func TestFuncNamesMatchFuncMap(t *testing.T) {
	fm := render.FuncMap(nil)
	var names []string
	for n := range fm {
		names = append(names, n)
	}
	if diff := cmp.Diff(sortedCopy(config.TemplateFuncNames), sortedCopy(names)); diff != "" {
		t.Errorf("config.TemplateFuncNames vs FuncMap (-config +notify):\n%s", diff)
	}
	seen := map[string]bool{}
	for _, n := range config.TemplateFuncNames {
		if seen[n] {
			t.Errorf("config.TemplateFuncNames lists %q twice", n)
		}
		seen[n] = true
	}
	if _, err := template.New("x").Funcs(fm).Parse("{{upper .}}"); err != nil {
		t.Fatal(err)
	}
}

func TestRepoURLToHTTPS(t *testing.T) {
	tests := []struct{ in, want, full string }{
		{"git@github.com:org/repo.git", "https://github.com/org/repo", "org/repo"},
		{"ssh://git@gitlab.com/group/sub/repo.git", "https://gitlab.com/group/sub/repo", "group/sub/repo"},
		{"https://user:pw@github.com/org/repo.git", "https://github.com/org/repo", "org/repo"},
		{"https://git.example.com:8443/org/repo", "https://git.example.com:8443/org/repo", "org/repo"},
		{"not a url", "not a url", ""},
	}
	for _, tt := range tests {
		if got := render.RepoURLToHTTPS(tt.in); got != tt.want {
			t.Errorf("RepoURLToHTTPS(%q) = %q, want %q", tt.in, got, tt.want)
		}
		if got := render.FullNameByRepoURL(tt.in); got != tt.full {
			t.Errorf("FullNameByRepoURL(%q) = %q, want %q", tt.in, got, tt.full)
		}
	}
}

func sortedCopy(s []string) []string {
	out := append([]string(nil), s...)
	for i := range out {
		for j := i + 1; j < len(out); j++ {
			if out[j] < out[i] {
				out[i], out[j] = out[j], out[i]
			}
		}
	}
	return out
}

// BenchmarkRender renders a typical Slack deployment template.
func BenchmarkRender(b *testing.B) {
	c, err := render.Compile(notify.Template{
		Name:    "app-deployed",
		Message: "{{.app.metadata.name}} is now running new version {{.app.status.sync.revision | truncate 7}} of {{repoFullName .app.spec.source.repoURL}}.",
		Slack: &notify.SlackTemplate{
			Attachments: `[{"title":"{{.app.metadata.name}}","color":"#18be52","fields":[{"title":"Sync Status","value":"{{.app.status.sync.status}}","short":true},{"title":"Health","value":"{{.app.status.health.status}}","short":true}]}]`,
			GroupingKey: "{{.app.metadata.namespace}}/{{.app.metadata.name}}",
		},
	})
	if err != nil {
		b.Fatal(err)
	}
	vars := appVars()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.Render(vars); err != nil {
			b.Fatal(err)
		}
	}
}
