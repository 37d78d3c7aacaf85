package controller

import (
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/crowsnest-dev/crowsnest/internal/redact"
)

// RedactEvents wraps rec so that every Event message passes through
// redact.String: an Event is readable by everyone who can read the
// Application, and its message is often an error that names a URL.
// Build every recorder the engine uses with it (cmd does, for the
// apiserver's and local mode's).
func RedactEvents(rec EventRecorder) EventRecorder {
	if rec == nil {
		return nil
	}
	if r, ok := rec.(redactedEvents); ok {
		return r
	}
	return redactedEvents{next: rec}
}

type redactedEvents struct{ next EventRecorder }

func (r redactedEvents) Event(object runtime.Object, eventType, reason, message string) {
	r.next.Event(object, eventType, reason, redact.String(message))
}
