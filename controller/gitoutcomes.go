package controller

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"

	"github.com/crowsnest-dev/crowsnest/triggers"
	"github.com/crowsnest-dev/crowsnest/writeback/forge"
	gitwb "github.com/crowsnest-dev/crowsnest/writeback/git"
	"github.com/crowsnest-dev/crowsnest/writeback/git/collect"
)

// What becomes of a Git write-back after the reconcile that decided it:
// RunGit takes the Git batcher's batches, has them written and reports
// each Application's outcome here, so the path of a write is controller →
// collect → writeback/git and back by return values, never by a call up.

// gitRetryDelay is when an Application whose write failed is tried
// again; the writer already retried transient errors within its attempt
// budget.
const gitRetryDelay = time.Minute

// gitReportTimeout bounds the follow-ups of a batch (refreshes and the
// journal writes that settle intents); gitSettleWorkers of them run at
// once, so the ConfigMap journal's group commit folds a large batch's
// into a few writes.
const (
	gitReportTimeout = 30 * time.Second
	gitSettleWorkers = 16
)

// Results of ImageMetrics' Git updates.
const (
	gitResultSuccess = "success"
	gitResultError   = "error"
	gitResultRefused = "refused"
)

// RunGit writes the Git batcher's batches until ctx ends, each as the
// batcher hands it over and beside the others being written (one
// repository's slow push does not hold another's), and reports each
// Application's outcome: Events, metrics, an image-updated notification
// per update, a refresh of Argo CD, the write intent settled, a retry for
// a failure. What is pending when ctx ends is written last, once the
// batches under way are reported, so a shutdown loses nothing that was
// decided.
func (r *ImageReconciler) RunGit(ctx context.Context) error {
	var writing sync.WaitGroup
	defer writing.Wait()
	for {
		batch, more := r.Git.Next(ctx)
		if !more {
			r.writeGit(context.WithoutCancel(ctx), batch)
			return nil
		}
		writing.Go(func() { r.writeGit(ctx, batch) })
	}
}

// writeGit writes one batch, reports its outcomes and settles it.
func (r *ImageReconciler) writeGit(ctx context.Context, batch collect.Batch) {
	if batch.Len() == 0 {
		return
	}
	outcomes, err := r.Git.Write(ctx, batch)
	if err != nil {
		r.Log.Error("git write-back failed", "apps", batch.Len(), "error", err)
	}
	r.reportGit(ctx, outcomes)
	r.Git.Settled(batch)
}

// reportGit reports each Application's outcome of one batch, then follows
// each up (settleGit).
func (r *ImageReconciler) reportGit(ctx context.Context, outcomes []collect.Outcome) {
	for i := range outcomes {
		o := &outcomes[i]
		for j := range o.Results {
			if res := &o.Results[j]; res.Err == nil && res.PullRequest != nil {
				r.reportPullRequest(o.Key, o, res)
				continue
			}
			r.reportGitResult(o.Key, &o.Results[j])
		}
	}
	r.settleGit(ctx, outcomes)
}

// reportGitResult reports what one commit did for the Application key.
func (r *ImageReconciler) reportGitResult(key string, res *collect.Result) {
	switch {
	case res.Err != nil && res.Refused:
		// Retrying cannot change the answer until the Application, the
		// repository or the config does, which reconciles it again.
		r.gitCount(gitResultRefused, 1)
		r.Tally.GitFailed(key)
		r.Log.Warn("git write-back refused", "app", key, "error", res.Err)
		r.keyEvent(key, eventTypeWarning, EventWriteBackRefused, "git write-back: "+res.Err.Error())
	case res.Err != nil:
		r.gitFail(key, res.Err)
	case len(res.Updates) > 0:
		r.gitCount(gitResultSuccess, len(res.Updates))
		msg := fmt.Sprintf("%s (commit %s on %s of %s)", describeUpdates(res.Updates), shortSHA(res.Commit), res.Branch, res.Repo)
		r.Log.Info("images updated", "app", key, "method", "git", "commit", res.Commit, "branch", res.Branch, "repo", res.Repo)
		r.keyEvent(key, eventTypeNormal, EventImagesUpdated, msg)
		r.GitWritten(key, res.Commit, res.Updates)
	}
}

// settleGit follows up each Application of a batch by its outcome: one the
// writer said nothing of fails; one written has Argo CD refresh and its
// intent settled (GitAnnounced); one found unchanged may announce a write
// a crash kept from being announced (GitUnchanged).
func (r *ImageReconciler) settleGit(ctx context.Context, outcomes []collect.Outcome) {
	// What was written is recorded even when ctx ended during the push
	// (a shutdown), within a bound of its own.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), gitReportTimeout)
	defer cancel()
	var work errgroup.Group
	work.SetLimit(gitSettleWorkers)
	for i := range outcomes {
		o := &outcomes[i]
		switch {
		case len(o.Results) == 0:
			r.gitFail(o.Key, collect.ErrNoResult)
		case o.Failed():
		case o.Proposed():
			// Nothing is deployed until the pull request is merged:
			// no refresh, no announcement (RunPullRequests makes it);
			// the intent is done, its write is on the head.
			if r.Journal != nil {
				work.Go(func() error { r.settle(ctx, o.Key, journalWrites(o.Changes)); return nil })
			}
		case o.Written():
			if r.Refresher != nil {
				work.Go(func() error {
					if err := r.Refresher.Refresh(ctx, o.Key); err != nil {
						r.Log.Warn("could not ask Argo CD to refresh; it will see the commit at its next poll", "app", o.Key, "error", err)
					}
					return nil
				})
			}
			work.Go(func() error { r.GitAnnounced(ctx, o.Key, o.Changes); return nil })
		default:
			work.Go(func() error { r.GitUnchanged(ctx, o.Key, o.Changes); return nil })
		}
	}
	_ = work.Wait()
}

// gitFail reports key's failed Git write and tries it again later: after
// gitRetryDelay, or the wait a forge's rate limit asks for when longer.
func (r *ImageReconciler) gitFail(key string, err error) {
	r.gitCount(gitResultError, 1)
	r.Tally.GitFailed(key)
	delay := gitRetryDelay
	var rl *forge.RateLimitError
	if errors.As(err, &rl) {
		delay = max(delay, rl.RetryAfter)
	}
	r.Log.Warn("git write-back failed; will retry", "app", key, "error", err, "retryIn", delay)
	r.keyEvent(key, eventTypeWarning, EventImageUpdateFailed, "git write-back: "+err.Error())
	if r.Queue != nil {
		r.Queue.EnqueueAfter(key, delay)
	}
}

func (r *ImageReconciler) gitCount(result string, n int) {
	if r.Metrics != nil {
		r.Metrics.update("git", result, n)
	}
}

// keyEvent records an Event on the Application key, after the reconcile
// (its object is not at hand).
func (r *ImageReconciler) keyEvent(key, typ, reason, msg string) {
	if r.Events == nil {
		return
	}
	ns, name, _ := strings.Cut(key, "/")
	r.Events.Event(&corev1.ObjectReference{APIVersion: "argoproj.io/v1alpha1", Kind: "Application", Namespace: ns, Name: name}, typ, reason, msg)
}

// GitFailed counts key's Git write-back as failed in the pass: the batch
// failed it after its reconcile recorded an update.
func (t *PassTally) GitFailed(key string) { t.record(key, OutcomeFailed) }

// GitWritten hands the notifier an image-updated event per value one
// commit wrote for key.
func (r *ImageReconciler) GitWritten(key, commit string, written []gitwb.Update) {
	if r.Notifier == nil || r.Queue == nil {
		return
	}
	app := r.Queue.App(key)
	if app == nil {
		return
	}
	for i := range written {
		u := &written[i]
		r.Notifier.OnEvent(app, gitUpdatedEvent(key, u.Image, u.From, u.To, commit, time.Now()))
	}
}

// gitUpdatedEvent is the image-updated event of a Git write-back. Its ID
// names the Application, image and new value only: the same whether the
// batch announces it or the write journal does after a crash (which knows
// neither the commit nor the file's previous value), so the notifier
// sends it once.
func gitUpdatedEvent(key, image, from, to, commit string, at time.Time) triggers.Event {
	ev := triggers.Event{Type: triggers.EventImageUpdated, Image: image, From: from, To: to, Commit: commit, Time: at,
		ID: strings.Join([]string{triggers.EventImageUpdated, key, image, to}, "|")}
	ev.Reason, ev.Message = tagMovedNote(from, to)
	return ev
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

func shortSHA(sha string) string {
	if len(sha) > 12 {
		return sha[:12]
	}
	return sha
}
