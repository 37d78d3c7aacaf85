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
		switch {
		case typ == triggers.EventImageUpdateHeld:
			ev.Window, ev.Reason = why, "SyncWindow"
		case why != "":
			ev.Reason, ev.Message = "WriteFailed", why
			ev.ID += "|" + r.now().Format(time.RFC3339) // each failure is news
		default:
			ev.Reason, ev.Message = tagMovedNote(c.From, c.To)
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
		if _, note := tagMovedNote(c.From, c.To); note != "" {
			part += " (" + note + ")"
		}
		parts = append(parts, part)
	}
	return strings.Join(parts, "; ")
}

// ReasonTagPushedAgain is the reason of an image-updated event whose
// pinned tag was pushed again (the same tag at a new digest).
const ReasonTagPushedAgain = "TagPushedAgain"

// tagMovedNote is the reason and message of a change from one tag@digest
// to the same tag at another digest; empty for any other change.
func tagMovedNote(from, to string) (reason, msg string) {
	tag, moved := imageupdate.TagMoved(from, to)
	if !moved {
		return "", ""
	}
	return ReasonTagPushedAgain, "tag " + tag + " was pushed again: same tag, new digest"
}
