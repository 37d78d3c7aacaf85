package controller

import (
	"strings"
	"time"

	"github.com/crowsnest-dev/crowsnest/triggers"
	gitwb "github.com/crowsnest-dev/crowsnest/writeback/git"
	"github.com/crowsnest-dev/crowsnest/writeback/git/collect"
)

// The Git batcher (writeback/git/collect) reports each Application's
// outcome after the reconcile that decided it has returned: these let it
// count into the image reconciler's metrics and pass tally, and announce
// through its Notify.
var (
	_ collect.Metrics = (*ImageMetrics)(nil)
	_ collect.Tally   = (*PassTally)(nil)
)

// GitUpdates counts n Git write-back updates (result "success") or failed
// Applications (result "error"), as collect.Batcher reports them.
func (m *ImageMetrics) GitUpdates(result string, n int) { m.update("git", result, n) }

// GitFailed counts key's Git write-back as failed in the pass: the batch
// failed it after its reconcile recorded an update.
func (t *PassTally) GitFailed(key string) { t.record(key, OutcomeFailed) }

// GitWritten is the Git batcher's Listener.GitWritten: it hands the notifier an
// image-updated event per value one commit wrote for key.
func (r *ImageReconciler) GitWritten(key, commit string, written []gitwb.Update) {
	if r.Notifier == nil || r.Queue == nil {
		return
	}
	app := r.Queue.App(key)
	if app == nil {
		return
	}
	for _, u := range written {
		r.Notifier.OnEvent(app, gitUpdatedEvent(key, u.Image, u.From, u.To, commit, time.Now()))
	}
}

// gitUpdatedEvent is the image-updated event of a Git write-back. Its ID
// names the Application, image and new value only: the same whether the
// batch announces it or the write journal does after a crash (which knows
// neither the commit nor the file's previous value), so the notifier
// sends it once.
func gitUpdatedEvent(key, image, from, to, commit string, at time.Time) triggers.Event {
	return triggers.Event{Type: triggers.EventImageUpdated, Image: image, From: from, To: to, Commit: commit, Time: at,
		ID: strings.Join([]string{triggers.EventImageUpdated, key, image, to}, "|")}
}
