package triggers

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"text/template"

	"github.com/crowsnest-dev/crowsnest/config"
)

// testFuncs are the few helpers the catalog's templates call, written here
// so that the catalog can be checked without package notify.
var testFuncs = template.FuncMap{
	"toJson": func(v any) string { b, _ := json.Marshal(v); return string(b) },
	"trunc": func(n int, s any) string {
		str := str(s)
		if len(str) > n {
			return str[:n]
		}
		return str
	},
	"default": func(d, v any) any {
		if v == nil || v == "" {
			return d
		}
		return v
	},
}

// TestCatalogTemplatesRender renders every block of every catalog template
// for the fixture its trigger fires on, and for a multi-source Application
// without spec.source: no template may fail on a missing field there.
func TestCatalogTemplatesRender(t *testing.T) {
	cat, err := Catalog()
	if err != nil {
		t.Fatal(err)
	}
	fixture := map[string]string{
		"app-created": "created", "app-deleted": "deleted", "app-deployed": "healthy", "app-health-degraded": "degraded",
		"app-sync-failed": "failed", "app-sync-running": "running", "app-sync-status-unknown": "unknown",
		"app-sync-succeeded": "succeeded",
	}
	for name, tmpl := range cat.Templates {
		apps := []string{"healthy"}
		if f, ok := fixture[name]; ok {
			apps = []string{f}
		}
		for _, appName := range apps {
			for _, multi := range []bool{false, true} {
				app := loadApp(t, appName)
				if multi {
					spec := app["spec"].(map[string]any)
					spec["sources"] = []any{spec["source"]}
					delete(spec, "source")
				}
				ev := (&Event{Type: strings.TrimPrefix(name, "app-"), ID: "e1", Image: "ghcr.io/x/y", From: "1.0", To: "1.1", Window: "nightly"}).Map()
				for _, svc := range []string{"slack", "webhook", "email"} {
					data := map[string]any{"app": app, "context": map[string]string{"argocdUrl": "https://argocd.example.com"}, "event": ev, "serviceType": svc}
					for field, text := range templateTexts(tmpl) {
						out := render(t, name+"."+field, text, data)
						if strings.Contains(out, "<no value>") {
							t.Errorf("%s.%s (%s, multi-source %v) printed <no value>:\n%s", name, field, appName, multi, out)
						}
						if (strings.HasSuffix(field, "attachments") || strings.HasSuffix(field, "body")) && !json.Valid([]byte(out)) {
							t.Errorf("%s.%s (%s) is not valid JSON:\n%s", name, field, appName, out)
						}
					}
				}
			}
		}
	}
}

func templateTexts(t config.Template) map[string]string {
	out := map[string]string{"message": t.Message, "email.subject": t.Email.Subject, "slack.attachments": t.Slack.Attachments}
	for name, w := range t.Webhook {
		out["webhook."+name+".body"] = w.Body
	}
	return out
}

func render(t *testing.T, name, text string, data any) string {
	t.Helper()
	tmpl, err := template.New(name).Option("missingkey=zero").Funcs(testFuncs).Parse(text)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	var buf bytes.Buffer
	if err := tmpl.Execute(&buf, data); err != nil {
		t.Errorf("%s: %v", name, err)
	}
	return buf.String()
}
