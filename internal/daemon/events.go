package daemon

import (
	"context"
	"log/slog"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/crowsnest-dev/crowsnest/controller"
)

// Event is an Event crowsnest recorded on an Application.
type Event struct {
	App     string `json:"app"` // namespace/name
	Type    string `json:"type"`
	Reason  string `json:"reason"`
	Message string `json:"message"`
}

// Observer is told of every Event the daemon records on an Application,
// redacted as recorded, in local and cluster mode alike and in order per
// Application. A program that runs the daemon reports from them what was
// found, written and held (`crowsnest demo` does). Observe must not
// block: the reconcile that recorded the Event waits for it.
type Observer interface {
	Observe(Event)
}

// eventOf is the Event a recorder is given.
func eventOf(object runtime.Object, typ, reason, msg string) Event {
	key := ""
	if ref, ok := object.(*corev1.ObjectReference); ok {
		key = ref.Namespace + "/" + ref.Name
	}
	return Event{App: key, Type: typ, Reason: reason, Message: msg}
}

// observerEvents is an Observer as an EventRecorder.
type observerEvents struct{ obs Observer }

func (o observerEvents) Event(object runtime.Object, typ, reason, msg string) {
	o.obs.Observe(eventOf(object, typ, reason, msg))
}

// observe returns rec, then telling obs of each Event when obs is set.
func observe(rec controller.EventRecorder, obs Observer) controller.EventRecorder {
	if obs == nil {
		return rec
	}
	return teeEvents{rec, observerEvents{obs}}
}

// logEvents is local mode's EventRecorder: there is no apiserver to record
// Events in, so each one is a log line; Warnings count as failures for
// --once.
type logEvents struct {
	log      *slog.Logger
	mu       sync.Mutex
	warnings int
}

func (l *logEvents) Event(object runtime.Object, typ, reason, msg string) {
	ev := eventOf(object, typ, reason, msg)
	level := slog.LevelInfo
	l.mu.Lock()
	if typ == corev1.EventTypeWarning {
		l.warnings++
		level = slog.LevelWarn
	}
	l.mu.Unlock()
	l.log.Log(context.Background(), level, "event", "app", ev.App, "type", typ, "reason", reason, "message", msg)
}

// Warnings returns how many Warning Events were recorded.
func (l *logEvents) Warnings() int {
	if l == nil {
		return 0
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.warnings
}

// teeEvents records each Event with both recorders, first then second:
// `run --dry-run --once` against a cluster records its Events there, as
// any run does, and counts their Warnings as local mode does, for the
// pass's exit code; an Observer is told of each Event once recorded.
type teeEvents struct{ first, second controller.EventRecorder }

func (t teeEvents) Event(object runtime.Object, typ, reason, msg string) {
	t.first.Event(object, typ, reason, msg)
	t.second.Event(object, typ, reason, msg)
}
