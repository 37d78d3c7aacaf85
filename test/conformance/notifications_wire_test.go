package conformance

import (
	"context"
	"encoding/json"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/argoproj/notifications-engine/pkg/services"
	"github.com/argoproj/notifications-engine/pkg/templates"
	"github.com/google/go-cmp/cmp"

	"github.com/crowsnest-dev/crowsnest/config"
	"github.com/crowsnest-dev/crowsnest/notify"
	cnpipeline "github.com/crowsnest-dev/crowsnest/notify/pipeline"
	"github.com/crowsnest-dev/crowsnest/notify/render"
	cnslack "github.com/crowsnest-dev/crowsnest/notify/services/slack"
	cnsvc "github.com/crowsnest-dev/crowsnest/notify/services/svc"
	cnwebhook "github.com/crowsnest-dev/crowsnest/notify/services/webhook"
)

// request is one captured HTTP request.
type request struct {
	Method, Path, ContentType string
	Form                      url.Values
	Body                      string
}

// recorder is a 127.0.0.1 server that records requests and answers as
// Slack's chat.postMessage (ok) or a webhook (200).
type recorder struct {
	srv  *httptest.Server
	mu   sync.Mutex
	reqs []request
}

func newRecorder(t *testing.T) *recorder {
	t.Helper()
	rec := &recorder{}
	rec.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		req := request{Method: r.Method, Path: r.URL.Path, ContentType: r.Header.Get("Content-Type"), Body: string(b)}
		if req.ContentType == "application/x-www-form-urlencoded" {
			req.Form, _ = url.ParseQuery(string(b))
			req.Body = ""
		}
		rec.mu.Lock()
		rec.reqs = append(rec.reqs, req)
		rec.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"ok":true,"channel":"C1","ts":"1700000000.000100"}`))
	}))
	t.Cleanup(rec.srv.Close)
	return rec
}

func (r *recorder) take() []request {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.reqs
	r.reqs = nil
	return out
}

// slackForm normalises a chat.postMessage form for comparison: JSON
// fields parsed, and crowsnest's delivery metadata (its own record of
// what it sent, which notifications-engine does not send) dropped.
func slackForm(f url.Values) map[string]any {
	out := map[string]any{}
	for k, v := range f {
		if k == "metadata" || k == "token" {
			continue
		}
		var j any
		if (k == "attachments" || k == "blocks") && json.Unmarshal([]byte(v[0]), &j) == nil {
			if l, ok := j.([]any); ok && len(l) == 0 {
				continue // an empty list is no blocks to Slack
			}
			out[k] = j
			continue
		}
		out[k] = v
	}
	return out
}

// TestCatalogOnTheWireMatchesNotificationsEngine sends every catalog
// template (and the webhook probe) for generated Applications through
// notifications-engine's real Slack and webhook services and through
// crowsnest's senders, each pointed at a recording server on 127.0.0.1,
// and compares the requests: Slack's chat.postMessage form (attachments
// and blocks as JSON), the webhook's method, path, content type and body
// (JSON compared semantically). Renders that differ by an allow-listed
// difference are skipped and counted (the render test shows why).
func TestCatalogOnTheWireMatchesNotificationsEngine(t *testing.T) {
	seed := propertySeed(t)
	reportSeed(t, seed)
	r := rand.New(rand.NewPCG(seed, 0x317e))
	set, cfg, _ := catalogSides(t, map[string]string{"template.webhook-probe": webhookProbe})
	tmpls, err := templates.NewService(cfg.Templates)
	if err != nil {
		t.Fatal(err)
	}
	eng, cn := newRecorder(t), newRecorder(t)
	engSlack := services.NewSlackService(services.SlackOptions{Token: "xoxb-test", ApiURL: eng.srv.URL + "/"})
	engHook := services.NewWebhookService(services.WebhookOptions{URL: eng.srv.URL + "/hook"})
	cnSlack, err := cnslack.New("slack", &config.SlackService{Token: config.InlineSecret("xoxb-test"), APIURL: cn.srv.URL + "/"}, cnsvc.Options{})
	if err != nil {
		t.Fatal(err)
	}
	// Read from argocd-notifications-cm, as the catalog is: a template
	// with no webhook block for it sends the message, as upstream does.
	cnHook, err := cnwebhook.New("github", &config.WebhookService{URL: cn.srv.URL + "/hook", Method: http.MethodGet, SendMessage: true}, cnsvc.Options{})
	if err != nil {
		t.Fatal(err)
	}
	names := make([]string, 0, len(cfg.Templates))
	for name := range cfg.Templates {
		names = append(names, name)
	}
	slices.Sort(names)
	ctx := map[string]string{"argocdUrl": "https://argocd.example.com"}
	base := time.Date(2026, 11, 26, 10, 0, 0, 0, time.UTC)
	compared, skipped, skippedWire := 0, 0, map[string]int{}
	for i := 0; i < 150; i++ {
		app := genNotifyApp(r, base)
		for _, name := range names {
			for _, svc := range []struct{ name, typ string }{{"slack", config.ServiceSlack}, {"github", config.ServiceWebhook}} {
				vars := engineVars(app, map[string]string{"argocdUrl": ctx["argocdUrl"], "notificationType": svc.name})
				vars["serviceType"] = svc.name
				en, eerr := tmpls.FormatNotification(vars, name)
				cnN, cerr := render.Once(cnpipeline.ServiceTemplate(name, set.Config.Templates[name], svc.name, svc.typ), cnpipeline.TemplateVars(app, nil, ctx, svc.typ))
				if eerr != nil || cerr != nil || !sameSent(engineSent(en, svc.typ, svc.name), crowsnestSent(cnN, svc.typ, svc.name)) {
					skipped++ // differences the render test classifies
					continue
				}
				dest := services.Destination{Service: svc.name, Recipient: "deploys"}
				var e1, e2 error
				if svc.typ == config.ServiceSlack {
					e1 = engSlack.Send(*en, dest)
					_, e2 = cnSlack.Send(context.Background(), cnN, notify.Destination{Service: svc.name, Recipient: "deploys"})
				} else {
					e1 = engHook.Send(*en, dest)
					_, e2 = cnHook.Send(context.Background(), cnN, notify.Destination{Service: svc.name, Recipient: "deploys"})
				}
				if (e1 != nil) != (e2 != nil) {
					t.Fatalf("%s for %s: notifications-engine error %v, crowsnest error %v", name, svc.name, e1, e2)
				}
				want, got := eng.take(), cn.take()
				if len(want) != len(got) {
					t.Fatalf("%s for %s: notifications-engine made %d requests, crowsnest %d\n%v\n%v", name, svc.name, len(want), len(got), want, got)
				}
				for k := range want {
					compared++
					w, g := want[k], got[k]
					if w.Form != nil || g.Form != nil {
						if diff := cmp.Diff(slackForm(w.Form), slackForm(g.Form)); diff != "" || w.Path != g.Path {
							t.Fatalf("%s for %s: %s vs %s (-notifications-engine +crowsnest):\n%s", name, svc.name, w.Path, g.Path, diff)
						}
						continue
					}
					var wb, gb any
					jsonEq := json.Unmarshal([]byte(w.Body), &wb) == nil && json.Unmarshal([]byte(g.Body), &gb) == nil && reflect.DeepEqual(wb, gb)
					if w.Method != g.Method || w.Path != g.Path || (!jsonEq && w.Body != g.Body) {
						t.Fatalf("%s for %s (-notifications-engine +crowsnest):\n%s", name, svc.name, cmp.Diff(w, g))
					}
				}
			}
		}
	}
	t.Logf("seed %d: %d requests compared on the wire, %d renders skipped (render differences), allow-listed %v", seed, compared, skipped, skippedWire)
	if compared == 0 {
		t.Fatal("nothing compared")
	}
}
