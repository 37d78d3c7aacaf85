// Package svctest is the test harness of the notification services and
// their subpackages: a Sink standing in for a service's API, Deliver
// sending one notification from an argocd-notifications-cm through a real
// outbox.Outbox, and Redirect for APIs with a fixed host. Tests only.
package svctest

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/crowsnest-dev/crowsnest/config"
	"github.com/crowsnest-dev/crowsnest/internal/testnotify"
	"github.com/crowsnest-dev/crowsnest/internal/testwait"
	"github.com/crowsnest-dev/crowsnest/notify"
	"github.com/crowsnest-dev/crowsnest/notify/outbox"
	"github.com/crowsnest-dev/crowsnest/notify/pipeline"
	notifyrender "github.com/crowsnest-dev/crowsnest/notify/render"
	"github.com/crowsnest-dev/crowsnest/notify/services"
)

// Received is one request a sink got.
type Received = testnotify.Request

// Answer is what a sink replies to one request.
type Answer = testnotify.Answer

// Sink is a local HTTP server standing in for a service's API: it records
// every request and replies from a script (the last answer repeats;
// 200 with an empty JSON object when there is none). TLS when asked.
type Sink struct {
	*testnotify.Recorder
	// Mu guards the script; Route runs under it, so a test changing what
	// its Route reads holds Mu.
	Mu      sync.Mutex
	answers []Answer
	// Route, when set, answers by request instead of the script.
	Route func(r Received) Answer
}

// NewSink starts a sink answering from answers, closed when the test ends.
func NewSink(t *testing.T, tlsServer bool, answers ...Answer) *Sink {
	t.Helper()
	s := &Sink{answers: answers}
	s.Recorder = testnotify.NewRecorder(t, testnotify.RecorderOptions{TLS: tlsServer, Answer: s.answer})
	return s
}

// answer replies to r by Route, else from the script.
func (s *Sink) answer(r Received) Answer {
	s.Mu.Lock()
	defer s.Mu.Unlock()
	switch {
	case s.Route != nil:
		return s.Route(r)
	case len(s.answers) > 0:
		a := s.answers[0]
		if len(s.answers) > 1 {
			s.answers = s.answers[1:]
		}
		return a
	}
	return Answer{Status: http.StatusOK, Body: "{}"}
}

// Delivery describes one notification to send through the outbox.
type Delivery struct {
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

// Deliver reads d.CM as crowsnest reads an argocd-notifications-cm,
// renders the template for the service, and sends it through a started
// outbox.Outbox; it returns the delivery's final record.
func Deliver(t *testing.T, d Delivery) outbox.Record {
	t.Helper()
	nc, svc := newSender(t, d)
	ctx, o := startOutbox(t, d, svc)
	return settle(ctx, t, o, outbox.Delivery{
		Key: t.Name(), App: "argocd/" + AppName(d.App), Trigger: "on-test",
		Service: d.Service, Recipient: d.Recipient, Notification: Render(t, nc, d),
	})
}

// DeliverEach sends one notification per app through one sender and one
// outbox, each settled before the next is queued, and returns the
// records.
func DeliverEach(t *testing.T, d Delivery, apps ...map[string]any) []outbox.Record {
	t.Helper()
	nc, svc := newSender(t, d)
	ctx, o := startOutbox(t, d, svc)
	var out []outbox.Record
	for i, app := range apps {
		d.App = app
		out = append(out, settle(ctx, t, o, outbox.Delivery{
			Key: fmt.Sprintf("%s/%d", t.Name(), i), App: "argocd/" + AppName(app), Trigger: "on-test",
			Service: d.Service, Recipient: d.Recipient, Notification: Render(t, nc, d),
		}))
	}
	return out
}

// newSender reads d.CM and builds the sender of d.Service.
func newSender(t *testing.T, d Delivery) (*config.Notifications, notify.Service) {
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
	return nc, svc
}

// startOutbox starts an outbox for svc, stopped when the test ends.
func startOutbox(t *testing.T, d Delivery, svc notify.Service) (context.Context, *outbox.Outbox) {
	t.Helper()
	attempts := d.MaxAttempts
	if attempts == 0 {
		attempts = 3
	}
	o := &outbox.Outbox{
		Store: &outbox.MemoryStore{}, Services: map[string]notify.Service{d.Service: svc},
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
	return ctx, o
}

// settle queues del and waits until its delivery is final.
func settle(ctx context.Context, t *testing.T, o *outbox.Outbox, del outbox.Delivery) outbox.Record {
	t.Helper()
	rec, _, err := o.Enqueue(ctx, del)
	if err != nil {
		t.Fatalf("Enqueue: %v", err)
	}
	var got outbox.Record
	last := func() string { return fmt.Sprintf("%+v (%v)", got, err) }
	// 30 s: well under the outbox's one-minute attempt timeout, so a
	// request that hung is not waited out and reported as settled.
	testwait.Wait{Timeout: 30 * time.Second, Detail: last}.For(t, "delivery "+del.Key+" to settle", func() bool {
		got, err = o.Find(ctx, rec.ID)
		return err == nil && got.Terminal()
	})
	return got
}

// Render renders d.Template for d.Service as the notifier does.
func Render(t *testing.T, nc *config.Notifications, d Delivery) notify.Notification {
	t.Helper()
	tmpl, ok := nc.Templates[d.Template]
	if !ok {
		t.Fatalf("no template %q", d.Template)
	}
	svcCfg := nc.Services[d.Service]
	typ := svcCfg.Type()
	// With the notifier's own template selection and variables.
	c, err := notifyrender.Compile(pipeline.ServiceTemplate(d.Template, tmpl, d.Service, typ))
	if err != nil {
		t.Fatalf("Compile: %v", err)
	}
	n, err := c.Render(pipeline.TemplateVars(d.App, nil, nc.Context, typ))
	if err != nil {
		t.Fatalf("Render: %v", err)
	}
	return n
}

// AppName is the Application's metadata.name.
func AppName(app map[string]any) string {
	md, _ := app["metadata"].(map[string]any)
	name, _ := md["name"].(string)
	return name
}

// App is an Application as templates see it.
func App(name string) map[string]any {
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

// MustContain fails unless s contains every part.
func MustContain(t *testing.T, what, s string, parts ...string) {
	t.Helper()
	for _, p := range parts {
		if !strings.Contains(s, p) {
			t.Errorf("%s: missing %q in %s", what, p, s)
		}
	}
}

// MustNotContain fails if s contains a secret.
func MustNotContain(t *testing.T, what, s string, secrets ...string) {
	t.Helper()
	for _, p := range secrets {
		if p != "" && strings.Contains(s, p) {
			t.Errorf("%s leaks %q: %s", what, p, s)
		}
	}
}

// Redirect is a transport that sends every request, whatever its host, to
// the sink (a TLS sink for https APIs with a fixed host such as
// api.telegram.org, api.pagerduty.com or sqs.<region>.amazonaws.com).
func Redirect(s *Sink) http.RoundTripper {
	addr := s.Listener.Addr().String()
	return &http.Transport{
		DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, network, addr)
		},
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, // the test sink's own certificate
	}
}

// StatusCase is one service's delivery for CheckStatuses.
type StatusCase struct {
	// Setup returns the delivery sent to sink s.
	Setup func(s *Sink) Delivery
	// TLS makes the sink HTTPS.
	TLS bool
	// OK is the service's success answer.
	OK Answer
	// Route, when set, answers requests that are not the message (a
	// login) and returns false; the message gets the script.
	Route func(r Received) (Answer, bool)
	// RateLimited is the service's 429 (Retry-After: 0 when unset).
	RateLimited *Answer
	// Secrets must not appear in a dead letter's error.
	Secrets []string
}

// CheckStatuses sends c's delivery through the outbox against answers a
// service's API gives: 429 with a wait then success (the wait is not an
// attempt), a 5xx then success (retried), and a 4xx (dead-lettered at
// once, its error naming the status and without a secret).
func CheckStatuses(t *testing.T, c StatusCase) {
	t.Helper()
	limited := Answer{Status: http.StatusTooManyRequests, Header: map[string]string{"Retry-After": "0"}, Body: `{"error":"slow down"}`}
	if c.RateLimited != nil {
		limited = *c.RateLimited
	}
	run := func(t *testing.T, maxAttempts int, script ...Answer) (outbox.Record, int) {
		t.Helper()
		s := NewSink(t, c.TLS)
		messages := 0
		s.Route = func(r Received) Answer {
			if c.Route != nil {
				if a, ok := c.Route(r); ok {
					return a
				}
			}
			messages++
			a := script[0]
			if len(script) > 1 {
				script = script[1:]
			}
			return a
		}
		d := c.Setup(s)
		d.MaxAttempts = maxAttempts
		rec := Deliver(t, d)
		s.Mu.Lock()
		defer s.Mu.Unlock()
		return rec, messages
	}
	t.Run("429 waits then delivers", func(t *testing.T) {
		rec, n := run(t, 1, limited, c.OK)
		if rec.State != outbox.StateDelivered || n != 2 {
			t.Fatalf("state %s after %d messages: %s", rec.State, n, rec.LastError)
		}
	})
	t.Run("5xx retried", func(t *testing.T) {
		rec, n := run(t, 3, Answer{Status: http.StatusBadGateway, Body: "bad gateway"}, c.OK)
		if rec.State != outbox.StateDelivered || rec.Attempts != 2 || n != 2 {
			t.Fatalf("state %s attempts %d messages %d: %s", rec.State, rec.Attempts, n, rec.LastError)
		}
	})
	t.Run("4xx dead-lettered at once without a secret", func(t *testing.T) {
		rec, n := run(t, 3, Answer{Status: http.StatusBadRequest, Body: `{"error":"bad request"}`})
		if rec.State != outbox.StateDead || rec.Attempts != 1 || n != 1 {
			t.Fatalf("state %s attempts %d messages %d", rec.State, rec.Attempts, n)
		}
		MustContain(t, "last error", rec.LastError, "400")
		MustNotContain(t, "last error", rec.LastError, c.Secrets...)
	})
}
