package render_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/crowsnest-dev/crowsnest/config"
	"github.com/crowsnest-dev/crowsnest/notify"
	"github.com/crowsnest-dev/crowsnest/notify/render"
)

// sprigOutside are the functions of sprig, Helm and friends that reach
// outside the template: the environment, files, the network, other
// templates or the cluster.
var sprigOutside = []string{
	"env", "expandenv", "getenv", "environment", "readFile", "readDir", "files", "glob", "getHostByName",
	"include", "tpl", "lookup", "exec", "shell", "osBase", "osClean", "osDir", "osExt", "osIsAbs",
	"fileExists", "mustEnv", "requiredEnv",
}

// Templates are hermetic: none of those functions exists, in notify's
// function map or in the list config checks templates against, and a
// template naming one does not compile (so it fails the config load).
func TestTemplatesHaveNoOutsideFunctions(t *testing.T) {
	funcs := render.FuncMap(time.Now)
	for _, name := range sprigOutside {
		if _, ok := funcs[name]; ok {
			t.Errorf("render.FuncMap has %q", name)
		}
		if slices.Contains(config.TemplateFuncNames, name) {
			t.Errorf("config.TemplateFuncNames lists %q", name)
		}
		text := "{{ " + name + ` "HOME" }}`
		if _, err := render.Compile(notify.Template{Name: "t", Message: text}); err == nil || !strings.Contains(err.Error(), `function "`+name+`" not defined`) {
			t.Errorf("Compile(%q) error = %v, want the function undefined", text, err)
		}
		if err := config.CheckTemplate(text); err == nil {
			t.Errorf("config.CheckTemplate(%q) accepted it", text)
		}
	}
}

// However a template tries, it cannot read the environment or a file:
// a variable and a file holding a known value never show in anything
// it renders, in any field.
func TestTemplatesCannotReadEnvironmentOrFiles(t *testing.T) {
	const value = "env-secret-4e1b9c"
	t.Setenv("CROWSNEST_TEMPLATE_SECRET", value)
	file := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(file, []byte(value), 0o600); err != nil {
		t.Fatal(err)
	}
	attempts := []string{
		`{{ . }}`, `{{ printf "%#v" . }}`, `{{ toJson . }}`, `{{ toYaml . }}`, `{{ $ }}`,
		`$CROWSNEST_TEMPLATE_SECRET ${CROWSNEST_TEMPLATE_SECRET}`,
		`{{ "$CROWSNEST_TEMPLATE_SECRET" }}{{ printf "%s" "${CROWSNEST_TEMPLATE_SECRET}" }}`,
		`{{ .Env.CROWSNEST_TEMPLATE_SECRET }}{{ .env }}{{ $.Env }}`,
		`{{ index . "CROWSNEST_TEMPLATE_SECRET" }}`,
		`{{ env "CROWSNEST_TEMPLATE_SECRET" }}`, `{{ expandenv "$CROWSNEST_TEMPLATE_SECRET" }}`, `{{ readFile "` + file + `" }}`,
		`{{ template "` + file + `" }}`,
		`{{ dateInZone "2006" now "../../../..` + file + `" }}`,
		`{{ b64dec "` + file + `" }}{{ fromJson "` + file + `" }}`,
		`{{ call .repo.FullNameByRepoURL "` + file + `" }}`,
	}
	for _, text := range attempts {
		tmpl := notify.Template{
			Name: "t", Message: text, Email: &notify.EmailTemplate{Subject: text},
			Slack:   &notify.SlackTemplate{GroupingKey: text},
			Webhook: map[string]notify.WebhookTemplate{"hook": {Path: text, Body: text}},
		}
		n, err := render.Once(tmpl, appVars(), render.WithClock(func() time.Time { return fixedNow }))
		if err != nil {
			if strings.Contains(err.Error(), value) {
				t.Errorf("%q: error shows the value: %v", text, err)
			}
			continue
		}
		rendered := strings.Join([]string{n.Message, n.Email.Subject, n.Slack.GroupingKey, n.Webhook["hook"].Path, n.Webhook["hook"].Body}, "\n")
		if strings.Contains(rendered, value) {
			t.Errorf("%q rendered the secret:\n%s", text, rendered)
		}
	}
}
