package controller

import (
	"context"
	"fmt"
	"strings"

	"github.com/crowsnest-dev/crowsnest/controller/dryrun"
	"github.com/crowsnest-dev/crowsnest/controller/imageupdate"
	"github.com/crowsnest-dev/crowsnest/triggers"
	"github.com/crowsnest-dev/crowsnest/watcher"
	"github.com/crowsnest-dev/crowsnest/writeback/kube"
)

// The second half of a reconcile (ImageReconciler.Reconcile): once the
// versions are selected, decide what they call for and carry it out.

// update decides what results mean for app and carries it out: nothing,
// a hold, a refusal, a plan (dry run) or a write. It returns how the
// reconcile ended, for the pass's tally (an error counts as failed
// whatever it says).
func (r *ImageReconciler) update(ctx context.Context, key string, app *watcher.App, spec *imageupdate.Spec, results map[string]imageupdate.Selection) (Result, string, error) {
	plan, outcome := r.decide(ctx, key, app, spec, results)
	if spec.WriteBack.PullRequest != nil {
		plan.Changes = r.dropDeclined(ctx, key, plan.Changes)
	}
	if len(plan.Changes) == 0 {
		return Result{}, outcome, nil
	}
	summary := describeChanges(plan.Changes)
	if plan.Held {
		return r.holdChanges(key, app, spec, plan, summary), OutcomeHeld, nil
	}
	if spec.WriteBack.Method == imageupdate.MethodGit {
		if err := r.admitGit(key, app, spec, plan.Changes); err != nil {
			return Result{}, OutcomeFailed, err
		}
	}
	if r.DryRun {
		r.Log.Info("dry run: would update images", "app", key, "changes", summary, "method", spec.WriteBack.Method)
		r.planWrite(ctx, key, app, spec, plan.Changes)
		return Result{}, OutcomeUpdated, nil
	}
	if spec.WriteBack.Method == imageupdate.MethodGit {
		outcome, err := r.queueGit(ctx, key, app, spec, plan.Changes, summary)
		return Result{}, outcome, err
	}
	outcome, err := r.writeKube(ctx, key, app, plan.Changes, summary)
	return Result{}, outcome, err
}

// decide plans the changes results call for, announces a write of a
// previous process found landed, and reports the images no version was
// selected for: as a failure when selection failed, once while it stays
// the same when no tag qualifies.
func (r *ImageReconciler) decide(ctx context.Context, key string, app *watcher.App, spec *imageupdate.Spec, results map[string]imageupdate.Selection) (imageupdate.Plan, string) {
	hold := r.hold(app, spec.WriteBack.Method == imageupdate.MethodGit && spec.WriteBack.PullRequest != nil)
	plan := imageupdate.Decide(app, spec, results, hold)
	r.setHeld(key, plan.Held)
	r.recoverLanded(r.previousIntent(ctx, key), app, spec, plan)
	outcome := OutcomeUpToDate
	var noCandidate, unsupported []string
	for _, s := range plan.Skipped {
		switch s.Reason {
		case imageupdate.ReasonUnsupportedSource, imageupdate.ReasonNoSource:
			unsupported = append(unsupported, "image "+s.Alias+": "+s.Detail)
		case imageupdate.ReasonSelectionFailed:
			outcome = OutcomeFailed
			r.Log.Warn("no version selected", "app", key, "image", s.Alias, "error", s.Detail)
			r.event(app, eventTypeWarning, EventImageUpdateFailed, fmt.Sprintf("image %s: %s", s.Alias, s.Detail))
		case imageupdate.ReasonNoCandidate:
			noCandidate = append(noCandidate, s.Alias+": "+s.Detail)
		}
	}
	// A source no override fits, or no source at all, is how the
	// Application is set up, not a failure of the pass: said once while
	// it stays the same.
	if len(unsupported) > 0 {
		r.Metrics.update(string(spec.WriteBack.Method), "unsupported", len(unsupported))
	}
	if what := strings.Join(unsupported, "; "); r.newSaid(saidKey{saidUnsupported, key}, what) {
		r.Log.Warn("image left alone: its source takes no image overrides", "app", key, "images", what)
		r.event(app, eventTypeWarning, EventUnsupportedSource, what)
	} else if what != "" {
		r.Log.Debug("images still left alone: their source takes no image overrides", "app", key)
	}
	// No tag passing the policy is nothing to do: said once while it
	// stays the same, never a failure.
	if what := strings.Join(noCandidate, "; "); r.newSaid(saidKey{saidNoCandidate, key}, what) {
		r.Log.Info("no tag qualifies; nothing to update", "app", key, "images", what)
	}
	return plan, outcome
}

// holdChanges reports changes a sync window holds (once while they stay
// the same) and comes back at the window's next boundary.
func (r *ImageReconciler) holdChanges(key string, app *watcher.App, spec *imageupdate.Spec, plan imageupdate.Plan, summary string) Result {
	r.Metrics.update(string(spec.WriteBack.Method), "held", len(plan.Changes))
	what := fmt.Sprintf("%s held by %s", summary, plan.HoldReason)
	if r.newHold(key, what) {
		r.Log.Info("image update held by a sync window", "app", key, "changes", summary, "window", plan.HoldReason)
		r.event(app, eventTypeNormal, EventImageUpdateHeld, what)
	} else {
		r.Log.Debug("image update still held by a sync window", "app", key, "changes", summary, "window", plan.HoldReason)
	}
	r.notifyChanges(app, triggers.EventImageUpdateHeld, plan.Changes, plan.HoldReason)
	if r.DryRun {
		p := dryrun.New(key, spec.WriteBack.Method, plan.Changes)
		p.HeldBy = plan.HoldReason
		dryrun.Record(r.Plans, p)
	}
	if next, ok := r.nextBoundary(app); ok {
		return Result{RequeueAfter: next}
	}
	return Result{}
}

// admitGit refuses a Git write-back to a repository app may not write
// (said once while the refusal stays the same), terminally.
func (r *ImageReconciler) admitGit(key string, app *watcher.App, spec *imageupdate.Spec, changes []imageupdate.Change) error {
	err := r.checkRepositories(app, spec, changes)
	if err == nil {
		r.newSaid(saidKey{saidRefused, key}, "")
		return nil
	}
	r.Metrics.update(string(spec.WriteBack.Method), "refused", len(changes))
	if r.newSaid(saidKey{saidRefused, key}, err.Error()) {
		r.Log.Warn("git write-back refused", "app", key, "error", err)
		r.event(app, eventTypeWarning, EventWriteBackRefused, err.Error())
	}
	if r.DryRun {
		p := dryrun.New(key, spec.WriteBack.Method, changes)
		p.Error = err.Error()
		dryrun.Record(r.Plans, p)
	}
	return Terminal(err)
}

// queueGit hands changes to the Git batcher, which writes and announces
// them after the reconcile.
func (r *ImageReconciler) queueGit(ctx context.Context, key string, app *watcher.App, spec *imageupdate.Spec, changes []imageupdate.Change, summary string) (string, error) {
	if r.Git == nil {
		r.event(app, eventTypeWarning, EventWriteBackNotWired, "write-back-method git needs a cluster (or a Git writer); nothing written")
		r.Metrics.update(string(spec.WriteBack.Method), "unavailable", len(changes))
		return OutcomeFailed, nil
	}
	chs, err := r.gitWrites(ctx, key, app, spec, changes)
	if err != nil {
		r.event(app, eventTypeWarning, EventImageUpdateFailed, err.Error())
		return OutcomeFailed, Terminal(err)
	}
	for i := range chs {
		r.Log.Debug("git write-back queued", "app", key, "repo", chs[i].RepoURL, "changes", summary)
	}
	r.recordIntent(ctx, key, intentOf(imageupdate.MethodGit, changes, r.now()))
	r.Git.Add(key, chs...)
	return OutcomeUpdated, nil
}

// writeKube patches changes into the Application (write-back-method
// argocd) and announces them.
func (r *ImageReconciler) writeKube(ctx context.Context, key string, app *watcher.App, changes []imageupdate.Change, summary string) (string, error) {
	r.recordIntent(ctx, key, intentOf(imageupdate.MethodArgoCD, changes, r.now()))
	written, err := r.Writer.ApplyFrom(ctx, app.Namespace, app.Name, app.Decoded(), overridesOf(changes))
	if err != nil {
		r.Metrics.update(string(imageupdate.MethodArgoCD), "error", len(changes))
		r.event(app, eventTypeWarning, EventImageUpdateFailed, fmt.Sprintf("writing %s: %v", summary, err))
		r.notifyChanges(app, triggers.EventImageUpdateFailed, changes, err.Error())
		return OutcomeFailed, fmt.Errorf("updating images of %s: %w", key, err)
	}
	r.Metrics.update(string(imageupdate.MethodArgoCD), "success", len(changes))
	if written.Patched {
		r.Log.Info("images updated", "app", key, "changes", summary, "method", "argocd")
		r.event(app, eventTypeNormal, EventImagesUpdated, summary+" (patched the Application)")
		r.notifyChanges(app, triggers.EventImageUpdated, changes, "")
	}
	return OutcomeUpdated, nil
}

func overridesOf(changes []imageupdate.Change) []kube.Override {
	bySource := map[int]*kube.Override{}
	var order []int
	for i := range changes {
		c := &changes[i]
		o := bySource[c.SourceIndex]
		if o == nil {
			o = &kube.Override{SourceIndex: c.SourceIndex}
			bySource[c.SourceIndex] = o
			order = append(order, c.SourceIndex)
		}
		if c.Kustomize != "" {
			o.KustomizeImages = append(o.KustomizeImages, kube.KustomizeImage{Name: c.KustomizeName, Entry: c.Kustomize})
		}
		o.HelmParameters = append(o.HelmParameters, c.Helm...)
	}
	out := make([]kube.Override, 0, len(order))
	for _, i := range order {
		out = append(out, *bySource[i])
	}
	return out
}
