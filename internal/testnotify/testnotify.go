package testnotify

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/crowsnest-dev/crowsnest/config"
	"github.com/crowsnest-dev/crowsnest/internal/testwait"
	"github.com/crowsnest-dev/crowsnest/notify"
	"github.com/crowsnest-dev/crowsnest/notify/services/svc"
	"github.com/crowsnest-dev/crowsnest/notify/services/webhook"
	"github.com/crowsnest-dev/crowsnest/triggers"
	"github.com/crowsnest-dev/crowsnest/watcher"
)

// Sink is a webhook receiver that records the "event" and "app" of every
// JSON body the catalog's templates send.
type Sink struct {
	// URL is where the "hook" service of Config sends.
	URL string
	rec *Recorder
}

// NewSink starts a Sink that stops when the test ends.
func NewSink(t *testing.T) *Sink {
	t.Helper()
	rec := NewRecorder(t, RecorderOptions{Answer: func(r Request) Answer {
		if !json.Valid([]byte(r.Body)) {
			t.Errorf("webhook body is not JSON:\n%s", r.Body)
		}
		return Answer{}
	}})
	return &Sink{URL: rec.URL, rec: rec}
}

// Messages returns what arrived so far, as "app:event", in order.
func (s *Sink) Messages() []string {
	var out []string
	for _, b := range s.rec.Bodies() {
		var body struct{ Event, App string }
		_ = json.Unmarshal([]byte(b), &body) // NewSink reported a body that is not JSON
		out = append(out, body.App+":"+body.Event)
	}
	return out
}

// WaitLast waits until the last message is want, then returns them all.
// Each Application's transitions and each destination's deliveries keep
// their order, so nothing sent before want can still arrive after it.
func (s *Sink) WaitLast(t *testing.T, want string) []string {
	t.Helper()
	testwait.For(t, "webhook message "+want, func() bool { m := s.Messages(); return len(m) > 0 && m[len(m)-1] == want })
	return s.Messages()
}

// WaitLen waits until n messages arrived, then returns them all. Use it
// where the last message also appears earlier in the sequence, so that
// WaitLast could return at the first one.
func (s *Sink) WaitLen(t *testing.T, n int) []string {
	t.Helper()
	testwait.For(t, fmt.Sprintf("%d webhook messages", n), func() bool { return len(s.Messages()) >= n })
	return s.Messages()
}

// Config turns the catalog on with one webhook service "hook" that sends
// to url.
func Config(url string) *config.Config {
	cfg := config.Default()
	cfg.Notifications = config.Notifications{
		Catalog:  true,
		Services: map[string]config.Service{"hook": {Webhook: &config.WebhookService{URL: url, Method: "POST", Timeout: config.Duration{Duration: 5 * time.Second}}}},
	}
	return cfg
}

// HookServices builds the "hook" webhook service of Config, for
// Notifier.Services.
func HookServices(nc *config.Notifications) (map[string]notify.Service, error) {
	wh, err := webhook.New("hook", nc.Services["hook"].Webhook, svc.Options{})
	return map[string]notify.Service{"hook": wh}, err
}

// SyncedFunc is a pipeline.Apps whose sources have synced when the func
// says so; it knows no AppProject.
type SyncedFunc func() bool

// Synced calls f.
func (f SyncedFunc) Synced() bool { return f() }

// Project knows no AppProject.
func (SyncedFunc) Project(*watcher.App) *watcher.Project { return nil }

// ServicesFunc is a pipeline.Setup that takes a config's notifications as
// they are and builds their senders with the func.
type ServicesFunc func(*config.Notifications) (map[string]notify.Service, error)

// Prepare returns n as it is.
func (ServicesFunc) Prepare(_ context.Context, n *config.Notifications) (*config.Notifications, error) {
	return n, nil
}

// Services calls f.
func (f ServicesFunc) Services(n *config.Notifications) (map[string]notify.Service, error) {
	return f(n)
}

// HookSetup is the pipeline.Setup of Config: HookServices.
var HookSetup = ServicesFunc(HookServices)

// SubscribeAll subscribes the "hook" service to every catalog trigger.
func SubscribeAll() map[string]string {
	ann := map[string]string{}
	for _, tr := range triggers.CatalogTriggers() {
		ann[triggers.SubscribePrefix+tr+".hook"] = ""
	}
	return ann
}

// AppObject is an Application on repoURL at revision sha, subscribed to
// trigger on-commit of the "hook" service.
func AppObject(name, repoURL, sha string) map[string]any {
	return map[string]any{
		"apiVersion": "argoproj.io/v1alpha1", "kind": "Application",
		"metadata": map[string]any{"name": name, "namespace": "argocd", "uid": "uid-" + name,
			"annotations": map[string]any{"notifications.argoproj.io/subscribe.on-commit.hook": ""}},
		"spec": map[string]any{
			"project": "default",
			"source": map[string]any{"repoURL": repoURL, "path": "guestbook", "targetRevision": "main",
				"helm": map[string]any{"valueFiles": []any{"prod-values.yaml"}, "parameters": []any{map[string]any{"name": "image.tag", "value": "v2.0.0"}}}},
			"destination": map[string]any{"server": "https://kubernetes.default.svc", "namespace": name},
		},
		"status": map[string]any{"sync": map[string]any{"status": "Synced", "revision": sha}},
	}
}

// RunTasks runs each task until the test ends or stop is called; stop
// waits for them and reports their errors.
func RunTasks(t *testing.T, tasks ...func(context.Context) error) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	for _, run := range tasks {
		wg.Go(func() {
			if err := run(ctx); err != nil {
				t.Errorf("task: %v", err)
			}
		})
	}
	var once sync.Once
	stop = func() { once.Do(func() { cancel(); wg.Wait() }) }
	t.Cleanup(stop)
	return stop
}
