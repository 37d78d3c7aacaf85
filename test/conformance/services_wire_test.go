package conformance

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/argoproj/notifications-engine/pkg/api"
	neservices "github.com/argoproj/notifications-engine/pkg/services"
	"github.com/argoproj/notifications-engine/pkg/templates"
	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/crowsnest-dev/crowsnest/config"
	"github.com/crowsnest-dev/crowsnest/notify"
	cnpipeline "github.com/crowsnest-dev/crowsnest/notify/pipeline"
	"github.com/crowsnest-dev/crowsnest/notify/render"
	"github.com/crowsnest-dev/crowsnest/notify/services"
)

// wireRequest is one request as a service's API received it.
type wireRequest struct {
	Method, Host, Path, Query string
	Header                    http.Header
	Body                      string
}

// wireSink is a 127.0.0.1 server (TLS when asked) standing in for a
// service's API: it records requests and answers with answer (200 and an
// empty JSON object when nil).
type wireSink struct {
	srv    *httptest.Server
	mu     sync.Mutex
	reqs   []wireRequest
	answer func(r wireRequest) (int, string)
}

func newWireSink(t *testing.T, tlsServer bool, answer func(wireRequest) (int, string)) *wireSink {
	t.Helper()
	s := &wireSink{answer: answer}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		req := wireRequest{Method: r.Method, Host: r.Host, Path: r.URL.Path, Query: r.URL.RawQuery, Header: r.Header.Clone(), Body: string(b)}
		s.mu.Lock()
		s.reqs = append(s.reqs, req)
		s.mu.Unlock()
		status, body := http.StatusOK, "{}"
		if s.answer != nil {
			status, body = s.answer(req)
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	})
	if tlsServer {
		s.srv = httptest.NewTLSServer(h)
	} else {
		s.srv = httptest.NewServer(h)
	}
	t.Cleanup(s.srv.Close)
	return s
}

func (s *wireSink) take() []wireRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := s.reqs
	s.reqs = nil
	return out
}

// redirectTransport sends every request, whatever its host, to the sink:
// for services whose API host is fixed (api.telegram.org, ...). TLS is
// not verified: the sink's certificate is for 127.0.0.1.
func (s *wireSink) redirectTransport() *http.Transport {
	addr := s.srv.Listener.Addr().String()
	return &http.Transport{
		DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, network, addr)
		},
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, // the test sink's own certificate
	}
}

// wireCase is one notification sent by notifications-engine and by
// crowsnest from the same argocd-notifications-cm.
type wireCase struct {
	// CM is the ConfigMap's data; "SINK" in it is replaced by each side's
	// sink URL, "SINKHOST" by its host:port (settings that take a host,
	// such as Alertmanager's targets).
	CM     map[string]string
	Secret map[string][]byte
	// Service and Template name the CM's service and template.
	Service, Template, Recipient string
	App                          map[string]any
	// TLS makes the sinks HTTPS; Redirect sends every request to the sink
	// whatever its host (services with a fixed API host), through
	// http.DefaultTransport for notifications-engine and
	// services.Options.Transport for crowsnest.
	TLS, Redirect bool
	// Answer is the sinks' answer (both get the same).
	Answer func(wireRequest) (int, string)
	// Headers are compared besides method, path, query and body.
	Headers []string
	// Normalize, when set, rewrites in both JSON bodies, before they are
	// compared, a field that cannot match (a random ID).
	Normalize func(body any)
}

// sendBothSides sends c through notifications-engine's service and
// crowsnest's sender and returns the requests each API received.
func sendBothSides(t *testing.T, c wireCase) (engine, crowsnest []wireRequest) {
	t.Helper()
	eng, cn := newWireSink(t, c.TLS, c.Answer), newWireSink(t, c.TLS, c.Answer)
	side := func(url string) map[string]string {
		out := map[string]string{}
		for k, v := range c.CM {
			host := url[strings.Index(url, "://")+3:]
			out[k] = strings.ReplaceAll(strings.ReplaceAll(v, "SINKHOST", host), "SINK", url)
		}
		return out
	}
	vars := map[string]string{"argocdUrl": "https://argocd.example.com"}

	// notifications-engine, configured and rendered as Argo CD does.
	cfg, err := api.ParseConfig(&corev1.ConfigMap{Data: side(eng.srv.URL)}, &corev1.Secret{Data: c.Secret})
	if err != nil {
		t.Fatalf("notifications-engine config: %v", err)
	}
	if c.Redirect {
		saved := http.DefaultTransport
		http.DefaultTransport = eng.redirectTransport()
		t.Cleanup(func() { http.DefaultTransport = saved })
	}
	factory, ok := cfg.Services[c.Service]
	if !ok {
		t.Fatalf("notifications-engine: no service %q", c.Service)
	}
	esvc, err := factory()
	if err != nil {
		t.Fatalf("notifications-engine service: %v", err)
	}
	tmpls, err := templates.NewService(cfg.Templates)
	if err != nil {
		t.Fatalf("notifications-engine templates: %v", err)
	}
	ev := engineVars(c.App, vars)
	en, err := tmpls.FormatNotification(ev, c.Template)
	if err != nil {
		t.Fatalf("notifications-engine render: %v", err)
	}
	if err := esvc.Send(*en, neservices.Destination{Service: c.Service, Recipient: c.Recipient}); err != nil {
		t.Logf("notifications-engine send: %v", err)
	}

	// crowsnest, reading the same ConfigMap.
	nc, err := config.ParseArgoCDConfigMap(side(cn.srv.URL), c.Secret)
	if err != nil {
		t.Fatalf("crowsnest config: %v", err)
	}
	svcCfg, ok := nc.Services[c.Service]
	if !ok || svcCfg.Ext == nil {
		t.Fatalf("crowsnest: service %q not read as a services Kind (unsupported: %v)", c.Service, nc.Unsupported)
	}
	kind, _ := services.Lookup(svcCfg.Ext.Type)
	var opts services.Options
	if c.Redirect {
		opts.Transport = cn.redirectTransport()
	}
	csvc, err := kind.New(c.Service, svcCfg.Ext.Settings, opts)
	if err != nil {
		t.Fatalf("crowsnest service: %v", err)
	}
	typ := svcCfg.Type()
	n, err := render.Once(cnpipeline.ServiceTemplate(c.Template, nc.Templates[c.Template], c.Service, typ),
		cnpipeline.TemplateVars(c.App, nil, vars, typ))
	if err != nil {
		t.Fatalf("crowsnest render: %v", err)
	}
	if _, err := csvc.Send(context.Background(), n, notify.Destination{Service: c.Service, Recipient: c.Recipient}); err != nil {
		t.Logf("crowsnest send: %v", err)
	}
	return eng.take(), cn.take()
}

// compareOnWire sends c both ways and fails unless the APIs received the
// same requests: method, path, query, c.Headers and body (JSON compared
// as values).
func compareOnWire(t *testing.T, c wireCase) []wireRequest {
	t.Helper()
	want, got := sendBothSides(t, c)
	if len(want) == 0 {
		t.Fatal("notifications-engine sent nothing: the case tests nothing")
	}
	if len(want) != len(got) {
		t.Fatalf("notifications-engine made %d requests, crowsnest %d\nengine:    %+v\ncrowsnest: %+v", len(want), len(got), want, got)
	}
	for i := range want {
		w, g := want[i], got[i]
		if w.Method != g.Method || w.Path != g.Path || w.Query != g.Query {
			t.Errorf("request %d: notifications-engine %s %s?%s, crowsnest %s %s?%s", i, w.Method, w.Path, w.Query, g.Method, g.Path, g.Query)
		}
		for _, h := range c.Headers {
			if w.Header.Get(h) != g.Header.Get(h) {
				t.Errorf("request %d: header %s: notifications-engine %q, crowsnest %q", i, h, w.Header.Get(h), g.Header.Get(h))
			}
		}
		var wb, gb any
		if json.Unmarshal([]byte(w.Body), &wb) == nil && json.Unmarshal([]byte(g.Body), &gb) == nil {
			if c.Normalize != nil {
				c.Normalize(wb)
				c.Normalize(gb)
			}
			if !reflect.DeepEqual(wb, gb) {
				t.Errorf("request %d body (-notifications-engine +crowsnest):\n%s", i, cmp.Diff(wb, gb))
			}
		} else if w.Body != g.Body {
			t.Errorf("request %d body (-notifications-engine +crowsnest):\n%s", i, cmp.Diff(w.Body, g.Body))
		}
	}
	return got
}

func TestMattermostOnTheWire(t *testing.T) {
	compareOnWire(t, wireCase{
		CM: map[string]string{
			"service.mattermost": "apiURL: SINK\ntoken: $mattermost-token\n",
			"template.app-deployed": `message: Application {{.app.metadata.name}} is now running a new version.
mattermost:
  attachments: |
    [{"title": "{{ .app.metadata.name}}", "title_link": "{{.context.argocdUrl}}/applications/{{.app.metadata.name}}",
      "color": "#18be52", "fields": [{"title": "Sync Status", "value": "{{.app.status.sync.status}}", "short": true}]}]
`,
		},
		Secret:  map[string][]byte{"mattermost-token": []byte("mm-token")},
		Service: "mattermost", Template: "app-deployed", Recipient: "channel-id-1",
		App:     wireApp("guestbook"),
		Answer:  func(wireRequest) (int, string) { return http.StatusCreated, `{"id":"p1"}` },
		Headers: []string{"Authorization", "Content-Type"},
	})
}

// wireApp is an Application as templates on both sides read it.
func wireApp(name string) map[string]any {
	return map[string]any{
		"apiVersion": "argoproj.io/v1alpha1", "kind": "Application",
		"metadata": map[string]any{"name": name, "namespace": "argocd"},
		"spec": map[string]any{"source": map[string]any{
			"repoURL": "https://github.com/example/" + name + ".git", "targetRevision": "main", "path": "deploy",
		}},
		"status": map[string]any{
			"sync":   map[string]any{"status": "Synced", "revision": "0123456789abcdef0123456789abcdef01234567"},
			"health": map[string]any{"status": "Healthy"},
			"operationState": map[string]any{
				"phase": "Succeeded", "finishedAt": "2026-11-26T10:00:00Z",
				"syncResult": map[string]any{"revision": "0123456789abcdef0123456789abcdef01234567"},
			},
		},
	}
}
