package controller

import (
	"context"
	"time"

	"github.com/crowsnest-dev/crowsnest/controller/imageupdate"
	"github.com/crowsnest-dev/crowsnest/triggers"
	"github.com/crowsnest-dev/crowsnest/watcher"
	gitwb "github.com/crowsnest-dev/crowsnest/writeback/git"
	"github.com/crowsnest-dev/crowsnest/writeback/journal"
)

// The notifier hears of an image write from memory, after the write: a
// crash (or a leader killed) between the write and the notifier recording
// its deliveries would lose the announcement, and after the restart the
// reconcile finds nothing left to do. So, before writing, the reconciler
// records what it is about to write (a journal.Intent per Application, in
// crowsnest's own ConfigMaps). The first reconcile of the Application in
// the next process checks whether that write landed and, if so, announces
// it again under the same event ID: the notifier, whose trigger state is
// persisted, sends it only if it had not recorded it before the crash.
// A Git write's batch settles its intent (journal.Intent.Done) once it was
// announced or found already made, so only unsettled ones are recovered:
// local mode, whose notifier forgets what it sent, keeps its intents in a
// file (journal.File) and announces a recovered Git write once, with
// an Event that says so.

// intentRecoveryWindow bounds recovery: an intent is recovered only
// within an hour of its write: a crashed process is back long before, and older ones could
// repeat an announcement the notifier state no longer remembers.
const intentRecoveryWindow = time.Hour

func intentOf(method imageupdate.Method, changes []imageupdate.Change, now time.Time) journal.Intent {
	in := journal.Intent{Method: string(method), At: now.UTC()}
	for i := range changes {
		in.Changes = append(in.Changes, journal.Change{Image: changes[i].Image, From: changes[i].From, To: changes[i].To})
	}
	return in
}

// book is the reconciler's journal.Book over Journal, made at first use.
func (r *ImageReconciler) book() *journal.Book {
	r.intentsOnce.Do(func() { r.intents = &journal.Book{Store: r.Journal} })
	return r.intents
}

// previousIntent returns, at the first reconcile of key in this process,
// the intent a previous process recorded within the recovery window. A
// journal that cannot be read is looked at again at the next reconcile.
func (r *ImageReconciler) previousIntent(ctx context.Context, key string) *journal.Intent {
	if r.Journal == nil {
		return nil
	}
	in, err := r.book().Previous(ctx, key, r.now(), intentRecoveryWindow)
	if err != nil {
		r.Log.Warn("reading the write journal failed; announcements of writes before a crash are recovered later", "app", key, "error", err)
		return nil
	}
	return in
}

// recordIntent saves the intent before its write; an unchanged one (a
// Git-mode Application decides the same change until Argo CD syncs) is
// not written again. A journal that cannot be written (crowsnest's
// namespace missing, no RBAC for ConfigMaps) does not hold the update
// back: only its announcement is then not crash-safe. Without a
// notification service configured only Git writes are recorded: their
// Event comes from the batch, after the reconcile, and a crash between
// the push and the batch's report would lose it.
func (r *ImageReconciler) recordIntent(ctx context.Context, key string, in journal.Intent) {
	notifies := r.Notifier != nil && r.Notifier.Announces()
	if r.Journal == nil || (!notifies && in.Method != string(imageupdate.MethodGit)) {
		return // nothing to announce: the write needs no record
	}
	if err := r.book().Record(ctx, key, in); err != nil {
		r.Log.Warn("recording the write intent failed; writing anyway, its announcement would not survive a crash", "app", key, "error", err)
	}
}

// forgetIntent drops a deleted Application's intent.
func (r *ImageReconciler) forgetIntent(ctx context.Context, key string) error {
	if r.Journal == nil {
		return nil
	}
	return r.book().Forget(ctx, key)
}

// recoverLanded announces again a write of the previous process that
// landed and is in force: every image of it is up to date at its new value
// (Kubernetes mode: the spec carries it; Git mode: Argo CD deployed it).
// A Git-mode write not deployed yet is held until the batch that writes
// the same change again says whether it was committed (GitUnchanged).
func (r *ImageReconciler) recoverLanded(in *journal.Intent, app *watcher.App, spec *imageupdate.Spec, plan imageupdate.Plan) {
	if in == nil {
		return
	}
	upToDate := map[string]string{} // image -> the value it is up to date at
	for _, s := range plan.Skipped {
		if s.Reason != imageupdate.ReasonUpToDate {
			continue
		}
		for i := range spec.Images {
			if spec.Images[i].Alias == s.Alias {
				upToDate[spec.Images[i].Name] = s.Detail
			}
		}
	}
	landed := true
	for _, c := range in.Changes {
		landed = landed && upToDate[c.Image] == c.To
	}
	switch {
	case landed:
		r.announceRecovered(app, in)
	case in.Method == string(imageupdate.MethodGit):
		r.book().Recovering(app.Key(), *in)
	}
	// A Kubernetes-mode write that did not land is written (and announced)
	// by this reconcile, under a new intent.
}

// announceRecovered hands the intent's changes to the notifier with the
// IDs the original announcement had.
func (r *ImageReconciler) announceRecovered(app *watcher.App, in *journal.Intent) {
	if r.Notifier == nil {
		return
	}
	changes := make([]imageupdate.Change, 0, len(in.Changes))
	for _, c := range in.Changes {
		changes = append(changes, imageupdate.Change{Image: c.Image, From: c.From, To: c.To})
	}
	r.Log.Info("image update of a previous run found written; announcing it unless it was", "app", app.Key(),
		"changes", describeChanges(changes), "method", in.Method)
	var evs []triggers.Event
	if in.Method == string(imageupdate.MethodGit) {
		for _, c := range in.Changes {
			evs = append(evs, gitUpdatedEvent(app.Key(), c.Image, c.From, c.To, "", r.now()))
		}
	} else {
		evs = r.changeEvents(app, triggers.EventImageUpdated, changes, "")
	}
	for i := range evs {
		evs[i].Recovered = true // the earlier process may have sent it
		r.Notifier.OnEvent(app, evs[i])
	}
}

// GitUnchanged follows up a Git batch (settleGit) that found app's
// changes (unchanged) already in the repository. If a previous process
// recorded that write and did not live to announce it, it is announced now: an
// ImagesUpdated Event that says so, and the notifications (which the
// notifier drops if it had sent them). Either way the intent is then
// done, so no later process announces it (again).
func (r *ImageReconciler) GitUnchanged(ctx context.Context, key string, unchanged []gitwb.Change) {
	if r.Journal == nil || r.Queue == nil {
		return
	}
	app := r.Queue.App(key)
	if app == nil {
		return
	}
	writes := journalWrites(unchanged)
	if rec, ok := r.book().Take(key, writes); ok {
		changes := make([]imageupdate.Change, 0, len(rec.Changes))
		for _, c := range rec.Changes {
			changes = append(changes, imageupdate.Change{Image: c.Image, From: c.From, To: c.To})
		}
		r.event(app, eventTypeNormal, EventImagesUpdated, describeChanges(changes)+" (written to Git by an earlier run that stopped before announcing it)")
		r.announceRecovered(app, &rec)
	}
	r.settle(ctx, key, writes)
}

// GitAnnounced follows up a Git batch (settleGit) that pushed key's
// changes (written) and announced them. The key's intent, when it is the
// write those changes make (a newer reconcile may have recorded the next
// one meanwhile), is done.
func (r *ImageReconciler) GitAnnounced(ctx context.Context, key string, written []gitwb.Change) {
	if r.Journal == nil {
		return
	}
	r.settle(ctx, key, journalWrites(written))
}

// settle marks key's intent done when it is the write of writes.
func (r *ImageReconciler) settle(ctx context.Context, key string, writes []journal.Change) {
	if err := r.book().Settle(ctx, key, writes); err != nil {
		r.Log.Warn("recording that a write was announced failed; a later run may announce it again", "app", key, "error", err)
	}
}

// journalWrites are the images and values an Application's Git changes
// write, as the journal compares them with an intent.
func journalWrites(chs []gitwb.Change) []journal.Change {
	var out []journal.Change
	for i := range chs {
		for j := range chs[i].Images {
			im := &chs[i].Images[j]
			to := im.NewTag
			if im.Digest != "" {
				to += "@" + im.Digest
			}
			out = append(out, journal.Change{Image: im.Name, To: to})
		}
	}
	return out
}
