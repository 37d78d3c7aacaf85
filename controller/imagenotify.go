package controller

import (
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/crowsnest-dev/crowsnest/controller/imageupdate"
	"github.com/crowsnest-dev/crowsnest/triggers"
	"github.com/crowsnest-dev/crowsnest/watcher"
)

// What the image reconciler tells: Kubernetes Events on Applications and
// crowsnest's own events for the notification pipeline.

func (r *ImageReconciler) event(app *watcher.App, typ, reason, msg string) {
	if r.Events == nil {
		return
	}
	r.Events.Event(&corev1.ObjectReference{
		APIVersion: "argoproj.io/v1alpha1", Kind: "Application",
		Namespace: app.Namespace, Name: app.Name, UID: types.UID(app.UID), ResourceVersion: app.ResourceVersion,
	}, typ, reason, msg)
}

// notifyChanges hands one event per changed image to the notifier. IDs
// are stable for the same change, so a repeated reconcile never sends
// twice (the catalog's event triggers fire once per ID).
func (r *ImageReconciler) notifyChanges(app *watcher.App, typ string, changes []imageupdate.Change, why string) {
	if r.Notifier == nil {
		return
	}
	evs := r.changeEvents(app, typ, changes, why)
	for i := range evs {
		r.Notifier.OnEvent(app, evs[i])
	}
}

// changeEvents are the events of changes, one per image.
func (r *ImageReconciler) changeEvents(app *watcher.App, typ string, changes []imageupdate.Change, why string) []triggers.Event {
	evs := make([]triggers.Event, 0, len(changes))
	for i := range changes {
		c := &changes[i]
		ev := triggers.Event{Type: typ, Image: c.Image, From: c.From, To: c.To, Time: r.now()}
		ev.ID = strings.Join([]string{typ, app.Namespace, app.Name, c.Image, c.From, c.To}, "|")
		if typ == triggers.EventImageUpdateHeld {
			ev.Window, ev.Reason = why, "SyncWindow"
		} else if why != "" {
			ev.Reason, ev.Message = "WriteFailed", why
			ev.ID += "|" + r.now().Format(time.RFC3339) // each failure is news
		}
		evs = append(evs, ev)
	}
	return evs
}

func describeChanges(changes []imageupdate.Change) string {
	parts := make([]string, 0, len(changes))
	for i := range changes {
		c := &changes[i]
		from := c.From
		if from == "" {
			from = "(not deployed)"
		}
		part := fmt.Sprintf("%s: %s -> %s", c.Image, from, c.To)
		if tag, moved := imageupdate.TagMoved(c.From, c.To); moved {
			part += " (tag " + tag + " was pushed again: same tag, new digest)"
		}
		parts = append(parts, part)
	}
	return strings.Join(parts, "; ")
}
