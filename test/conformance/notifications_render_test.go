package conformance

import (
	"encoding/json"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/argoproj/notifications-engine/pkg/services"
	"github.com/argoproj/notifications-engine/pkg/templates"
	"github.com/google/go-cmp/cmp"

	"github.com/crowsnest-dev/crowsnest/config"
	"github.com/crowsnest-dev/crowsnest/notify"
	cnpipeline "github.com/crowsnest-dev/crowsnest/notify/pipeline"
	"github.com/crowsnest-dev/crowsnest/notify/render"
)

// webhookProbe is a template in the shape Argo CD's docs give for a
// webhook (GitHub commit status), added to the catalog because the
// catalog's own templates have no webhook block.
const webhookProbe = `webhook:
  github:
    method: POST
    path: /repos/{{call .repo.FullNameByRepoURL .app.spec.source.repoURL}}/statuses/{{.app.status.operationState.syncResult.revision}}
    body: |
      {
        "state": "{{if eq .app.status.operationState.phase "Succeeded"}}success{{else}}failure{{end}}",
        "description": "ArgoCD {{.app.metadata.name}}",
        "target_url": "{{.context.argocdUrl}}/applications/{{.app.metadata.name}}",
        "context": "continuous-delivery/{{.app.metadata.name}}"
      }
message: "{{.app.metadata.name}} {{.app.status.sync.status}}"
`

// sent is what one service sends for a rendered notification, in the
// terms both sides share.
type sent struct {
	Text, Attachments, Blocks, GroupingKey, DeliveryPolicy string
	NotifyBroadcast                                        bool
	Subject, Body                                          string
	Method, Path, WebhookBody                              string
}

func engineSent(n *services.Notification, svcType, svcName string) sent {
	var s sent
	switch svcType {
	case config.ServiceSlack:
		s.Text = n.Message
		if n.Slack != nil {
			s.Attachments, s.Blocks, s.GroupingKey = n.Slack.Attachments, n.Slack.Blocks, n.Slack.GroupingKey
			s.NotifyBroadcast, s.DeliveryPolicy = n.Slack.NotifyBroadcast, n.Slack.DeliveryPolicy.String()
		}
	case config.ServiceEmail:
		s.Body = n.Message
		if n.Email != nil {
			s.Subject = n.Email.Subject
			if n.Email.Body != "" {
				s.Body = n.Email.Body
			}
		}
	case config.ServiceWebhook:
		w, ok := n.Webhook[svcName]
		if !ok {
			// The service's URL, GET, the message as body.
			return sent{Method: "GET", WebhookBody: n.Message}
		}
		s.Method, s.Path, s.WebhookBody = w.Method, w.Path, w.Body
	}
	return s
}

func crowsnestSent(n notify.Notification, svcType, svcName string) sent {
	var s sent
	switch svcType {
	case config.ServiceSlack:
		s.Text = n.Message
		if n.Slack != nil {
			s.Attachments, s.Blocks, s.GroupingKey = n.Slack.Attachments, n.Slack.Blocks, n.Slack.GroupingKey
			s.NotifyBroadcast, s.DeliveryPolicy = n.Slack.NotifyBroadcast, string(n.Slack.DeliveryPolicy)
		}
	case config.ServiceEmail:
		s.Body = n.Message
		if n.Email != nil {
			s.Subject = n.Email.Subject
		}
	case config.ServiceWebhook:
		w, ok := n.Webhook[svcName]
		if !ok {
			// A webhook service read from argocd-notifications-cm, as
			// the catalog's are (config.WebhookService.SendMessage).
			return sent{Method: "GET", WebhookBody: n.Message}
		}
		s.Method, s.Path, s.WebhookBody = w.Method, w.Path, w.Body
	}
	return s
}

// sameSent compares two sends, the JSON parts semantically.
func sameSent(a, b sent) bool {
	for _, p := range [][2]*string{{&a.Attachments, &b.Attachments}, {&a.Blocks, &b.Blocks}, {&a.WebhookBody, &b.WebhookBody}} {
		if !sameJSON(*p[0], *p[1]) {
			return false
		}
		*p[0], *p[1] = "", ""
	}
	if a.DeliveryPolicy == "" {
		a.DeliveryPolicy = "Post"
	}
	if b.DeliveryPolicy == "" {
		b.DeliveryPolicy = "Post"
	}
	return a == b
}

func sameJSON(a, b string) bool {
	if a == b {
		return true
	}
	var x, y any
	if json.Unmarshal([]byte(a), &x) != nil || json.Unmarshal([]byte(b), &y) != nil {
		return false
	}
	return reflect.DeepEqual(x, y)
}

// TestCatalogTemplatesMatchNotificationsEngine renders every template of
// Argo CD's catalog (and a webhook template in the shape of Argo CD's
// docs) for generated Applications, with crowsnest and with
// notifications-engine, for a slack, an email and a webhook service, and
// compares what each service would send: text, attachments and blocks
// (JSON compared semantically), grouping key and delivery policy; email
// subject and body; webhook method, path and body. A render that fails
// must fail on both sides.
func TestCatalogTemplatesMatchNotificationsEngine(t *testing.T) {
	seed := propertySeed(t)
	reportSeed(t, seed)
	r := rand.New(rand.NewPCG(seed, 0x7e4d))
	set, cfg, _ := catalogSides(t, map[string]string{"template.webhook-probe": webhookProbe})
	engine, err := templates.NewService(cfg.Templates)
	if err != nil {
		t.Fatal(err)
	}
	names := make([]string, 0, len(cfg.Templates))
	for name := range cfg.Templates {
		names = append(names, name)
	}
	slices.Sort(names)
	svcs := []struct{ name, typ string }{
		{"slack", config.ServiceSlack}, {"email", config.ServiceEmail}, {"github", config.ServiceWebhook},
		// A named Slack service (service.slack.team): Argo CD's catalog
		// reads .serviceType, which notifications-engine sets to the
		// service's name.
		{"team", config.ServiceSlack},
	}
	compiled := map[string]*render.Compiled{}
	for _, name := range names {
		for _, svc := range svcs {
			c, err := render.Compile(cnpipeline.ServiceTemplate(name, set.Config.Templates[name], svc.name, svc.typ))
			if err != nil {
				t.Fatalf("crowsnest: %v", err)
			}
			compiled[name+"/"+svc.name] = c
		}
	}
	ctx := map[string]string{"argocdUrl": "https://argocd.example.com"}
	const apps = 1500
	cases, refused, skipped := 0, 0, map[string]int{}
	base := time.Date(2026, 11, 26, 10, 0, 0, 0, time.UTC)
	for i := 0; i < apps; i++ {
		app := genNotifyApp(r, base)
		for _, name := range names {
			for _, svc := range svcs {
				cases++
				ectx := map[string]string{"notificationType": svc.name}
				for k, v := range ctx {
					ectx[k] = v
				}
				vars := engineVars(app, ectx)
				vars["serviceType"] = svc.name
				en, eerr := engine.FormatNotification(vars, name)
				cn, cerr := compiled[name+"/"+svc.name].Render(cnpipeline.TemplateVars(app, nil, ctx, svc.typ))
				appJSON, _ := json.Marshal(app)
				if eerr == nil && cerr != nil && strings.Contains(cerr.Error(), "not valid JSON") && en.Slack != nil &&
					(!validJSON(en.Slack.Attachments) || !validJSON(en.Slack.Blocks)) {
					// notifications-engine's slack service refuses the same
					// JSON when it sends: neither side sends anything.
					refused++
					continue
				}
				if (eerr != nil) != (cerr != nil) {
					// render-own-block: notifications-engine renders every
					// service's block for each service.
					if eerr != nil && cerr == nil && svc.typ != config.ServiceWebhook && strings.Contains(eerr.Error(), name+"github") {
						skipped[allowed(t, "render-own-block")]++
						continue
					}
					t.Fatalf("app %d, %s for %s: crowsnest error %v, notifications-engine error %v\napp: %s", i, name, svc.name, cerr, eerr, appJSON)
				}
				if eerr != nil {
					continue
				}
				want, got := engineSent(en, svc.typ, svc.name), crowsnestSent(cn, svc.typ, svc.name)
				if sameSent(want, got) {
					continue
				}
				if id := renderDifference(engine, vars, name, svc.typ, svc.name, got); id != "" {
					skipped[allowed(t, id)]++
					continue
				}
				t.Fatalf("app %d, %s for %s (-notifications-engine +crowsnest):\n%s\napp: %s", i, name, svc.name, cmp.Diff(want, got), appJSON)
			}
		}
	}
	t.Logf("seed %d: %d renders (%d templates x %d services x %d Applications), %d refused by both (invalid Slack JSON), allow-listed %v", seed, cases, len(names), len(svcs), apps, refused, skipped)
}

// renderDifference names the allow-listed difference that explains a
// disagreement between renders, "" when none does: it renders again with
// notifications-engine, undoing one difference at a time, and names the
// one after which both sides send the same.
func renderDifference(engine templates.Service, vars map[string]any, name, svcType, svcName string, got sent) string {
	// service-type-not-name: .serviceType is the service's type.
	v := make(map[string]any, len(vars))
	for k, x := range vars {
		v[k] = x
	}
	if vars["serviceType"] != svcType {
		v["serviceType"] = svcType
		if en, err := engine.FormatNotification(v, name); err == nil && sameSent(noValue(engineSent(en, svcType, svcName)), got) {
			return "service-type-not-name"
		}
	}
	// missing-field-empty: a missing field prints nothing.
	if en, err := engine.FormatNotification(vars, name); err == nil && sameSent(noValue(engineSent(en, svcType, svcName)), got) {
		return "missing-field-empty"
	}
	return ""
}

// noValue replaces text/template's "<no value>" (a missing map key) by
// nothing, as crowsnest prints it.
func noValue(s sent) sent {
	for _, f := range []*string{&s.Text, &s.Attachments, &s.Blocks, &s.GroupingKey, &s.Subject, &s.Body, &s.Path, &s.WebhookBody} {
		*f = strings.ReplaceAll(*f, "<no value>", "")
	}
	return s
}

func validJSON(s string) bool { return strings.TrimSpace(s) == "" || json.Valid([]byte(s)) }

// allowed returns id, failing the test unless notificationDifferences
// lists it.
func allowed(t *testing.T, id string) string {
	t.Helper()
	for _, d := range notificationDifferences {
		if d.ID == id {
			return id
		}
	}
	t.Fatalf("difference %q is not in notificationDifferences", id)
	return id
}
