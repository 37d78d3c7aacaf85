package kubeevents

import (
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/crowsnest-dev/crowsnest/internal/redact"
)

// Recorder records a Kubernetes Event: the one method of client-go's
// record.EventRecorder crowsnest uses, which a Sink has.
type Recorder interface {
	Event(object runtime.Object, eventType, reason, message string)
}

var _ Recorder = (*Sink)(nil)

// Redact wraps rec so that every Event message passes through
// redact.String: an Event is readable by everyone who can read the
// Application, and its message is often an error that names a URL.
// Build every recorder the engine uses with it (cmd does, for the
// apiserver's and local mode's).
func Redact(rec Recorder) Recorder {
	if rec == nil {
		return nil
	}
	if r, ok := rec.(redacted); ok {
		return r
	}
	return redacted{next: rec}
}

type redacted struct{ next Recorder }

func (r redacted) Event(object runtime.Object, eventType, reason, message string) {
	r.next.Event(object, eventType, reason, redact.String(message))
}
