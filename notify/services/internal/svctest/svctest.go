package svctest

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/crowsnest-dev/crowsnest/config"
	"github.com/crowsnest-dev/crowsnest/notify"
	"github.com/crowsnest-dev/crowsnest/notify/services"
)

// received is one request a sink got.
type received struct {
	Method string
	Path   string
	Query  string
	Header http.Header
	Body   string
}

// answer is what a sink replies to one request.
type answer struct {
	Status int
	Header map[string]string
	Body   string
}

// sink is a local HTTP server standing in for a service's API: it records
// every request and replies from a script (the last answer repeats;
// 200 with an empty JSON object when there is none). TLS when asked.
type sink struct {
	*httptest.Server
	mu      sync.Mutex
	reqs    []received
	answers []answer
	// route, when set, answers by request instead of the script.
	route func(r received) answer
}

func newSink(t *testing.T, tlsServer bool, answers ...answer) *sink {
	t.Helper()
	s := &sink{answers: answers}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		rc := received{Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery, Header: r.Header.Clone(), Body: string(body)}
		s.mu.Lock()
		s.reqs = append(s.reqs, rc)
		a := answer{Status: http.StatusOK, Body: "{}"}
		switch {
		case s.route != nil:
			a = s.route(rc)
		case len(s.answers) > 0:
			a = s.answers[0]
			if len(s.answers) > 1 {
				s.answers = s.answers[1:]
			}
		}
		s.mu.Unlock()
		for k, v := range a.Header {
			w.Header().Set(k, v)
		}
		if a.Status == 0 {
			a.Status = http.StatusOK
		}
		w.WriteHeader(a.Status)
		_, _ = io.WriteString(w, a.Body)
	})
	if tlsServer {
		s.Server = httptest.NewTLSServer(h)
	} else {
		s.Server = httptest.NewServer(h)
	}
	t.Cleanup(s.Close)
	return s
}

// Requests returns a copy of what the sink received.
func (s *sink) Requests() []received {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]received(nil), s.reqs...)
}

// delivery describes one notification to send through the outbox.
type delivery struct {
	// CM is an argocd-notifications-cm's data (service.<type>[.<name>],
	// template.<name>); Secret answers its $key references.
	CM     map[string]string
	Secret map[string][]byte
	// Service is the configured service's name; Template the template's.
	Service, Template, Recipient string
	// App is the Application the template reads (app.metadata.name, ...).
	App map[string]any
	// Transport, when set, is the sender's HTTP transport.
	Transport http.RoundTripper
	// MaxAttempts bounds the outbox's attempts (default 3); retries wait
	// 10 ms.
	MaxAttempts int
}

// deliver reads d.CM as crowsnest reads an argocd-notifications-cm,
// renders the template for the service, and sends it through a started
// notify.Outbox; it returns the delivery's final record.
func deliver(t *testing.T, d delivery) notify.Record {
	t.Helper()
	nc, err := config.ParseArgoCDConfigMap(d.CM, d.Secret)
	if err != nil {
		t.Fatalf("ParseArgoCDConfigMap: %v", err)
	}
	if len(nc.Unsupported) > 0 {
		t.Fatalf("unsupported: %v", nc.Unsupported)
	}
	svcCfg, ok := nc.Services[d.Service]
	if !ok {
		t.Fatalf("no service %q in %v", d.Service, nc.Services)
	}
	if svcCfg.Ext == nil {
		t.Fatalf("service %q is not a services Kind (type %q)", d.Service, svcCfg.Type())
	}
	kind, _ := services.Lookup(svcCfg.Ext.Type)
	svc, err := kind.New(d.Service, svcCfg.Ext.Settings, services.Options{Transport: d.Transport})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	n := render(t, nc, d)
	attempts := d.MaxAttempts
	if attempts == 0 {
		attempts = 3
	}
	o := &notify.Outbox{
		Store: &notify.MemoryStore{}, Services: map[string]notify.Service{d.Service: svc},
		MaxAttempts: attempts, RetryBaseDelay: 10 * time.Millisecond, RetryMaxDelay: 10 * time.Millisecond,
		MaxRetryAfter: 5 * time.Second,
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- o.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("outbox: %v", err)
		}
	})
	rec, _, err := o.Enqueue(ctx, notify.Delivery{
		Key: t.Name(), App: "argocd/" + appName(d.App), Trigger: "on-test",
		Service: d.Service, Recipient: d.Recipient, Notification: n,
	})
	if err != nil {
		t.Fatalf("Enqueue: %v", err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		got, err := o.Find(ctx, rec.ID)
		if err == nil && got.Terminal() {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("delivery not settled after 30s: %+v (%v)", got, err)
		}
		time.Sleep(5 * time.Millisecond) // sleep-ok: polling for the delivery to settle
	}
}

// render renders d.Template for d.Service as the notifier does.
func render(t *testing.T, nc *config.Notifications, d delivery) notify.Notification {
	t.Helper()
	tmpl, ok := nc.Templates[d.Template]
	if !ok {
		t.Fatalf("no template %q", d.Template)
	}
	svcCfg := nc.Services[d.Service]
	typ := svcCfg.Type()
	// As the notifier renders for a service of these types
	// (controller.ServiceTemplate and TemplateVars, which this leaf
	// package's tests may not import).
	c, err := notify.Compile(notify.Template{Name: d.Template, Message: tmpl.Message, Blocks: services.TemplateBlocks(d.Template, tmpl.Blocks, typ)})
	if err != nil {
		t.Fatalf("Compile: %v", err)
	}
	n, err := c.Render(map[string]any{"app": d.App, "context": nc.Context, "event": nil, "serviceType": typ, "repo": notify.RepoHelpers()})
	if err != nil {
		t.Fatalf("Render: %v", err)
	}
	return n
}

func appName(app map[string]any) string {
	md, _ := app["metadata"].(map[string]any)
	name, _ := md["name"].(string)
	return name
}

// testApp is an Application as templates see it.
func testApp(name string) map[string]any {
	return map[string]any{
		"metadata": map[string]any{"name": name, "namespace": "argocd"},
		"spec": map[string]any{"source": map[string]any{
			"repoURL": "https://github.com/example/" + name + ".git", "targetRevision": "main",
		}},
		"status": map[string]any{
			"sync":   map[string]any{"status": "Synced", "revision": "0123456789abcdef0123456789abcdef01234567"},
			"health": map[string]any{"status": "Healthy"},
			"operationState": map[string]any{
				"phase": "Succeeded", "syncResult": map[string]any{"revision": "0123456789abcdef0123456789abcdef01234567"},
			},
		},
	}
}

// mustContain fails unless s contains every part.
func mustContain(t *testing.T, what, s string, parts ...string) {
	t.Helper()
	for _, p := range parts {
		if !strings.Contains(s, p) {
			t.Errorf("%s: missing %q in %s", what, p, s)
		}
	}
}

// mustNotContain fails if s contains a secret.
func mustNotContain(t *testing.T, what, s string, secrets ...string) {
	t.Helper()
	for _, p := range secrets {
		if p != "" && strings.Contains(s, p) {
			t.Errorf("%s leaks %q: %s", what, p, s)
		}
	}
}
