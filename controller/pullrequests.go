package controller

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/crowsnest-dev/crowsnest/controller/imageupdate"
	"github.com/crowsnest-dev/crowsnest/triggers"
	"github.com/crowsnest-dev/crowsnest/writeback/forge"
	gitwb "github.com/crowsnest-dev/crowsnest/writeback/git"
	"github.com/crowsnest-dev/crowsnest/writeback/git/collect"
	"github.com/crowsnest-dev/crowsnest/writeback/journal"
)

// What becomes of a pull-request write-back: the batch's pull request is
// reported (Events, metrics, on-pr-opened and on-pr-updated), nothing is
// announced as updated and Argo CD is not asked to refresh (nothing is
// deployed until the pull request is merged), and the pull request is
// followed (RunPullRequests): merged, its merge commit is announced
// (on-pr-merged, then image-updated) and Argo CD refreshed; closed
// without merging, on-pr-closed; no longer wanted by any of its
// Applications (each deleted), it is closed with a comment.

// Event reasons of pull-request write-backs.
const (
	EventPullRequestOpened  = "PullRequestOpened"
	EventPullRequestUpdated = "PullRequestUpdated"
	EventPullRequestMerged  = "PullRequestMerged"
	EventPullRequestClosed  = "PullRequestClosed"
)

// DefaultPullRequestInterval is how often open pull requests are asked
// for their state: one request per open pull request, well inside every
// forge's rate limits (50 pull requests are 1,500 requests an hour of
// GitHub's 5,000).
const DefaultPullRequestInterval = 2 * time.Minute

// PullRequestForge reads and closes the pull requests pull-request
// write-backs opened, with the credentials that opened them (the Git
// writer).
type PullRequestForge interface {
	PullRequestState(ctx context.Context, ref gitwb.PullRequestRef) (*forge.PullRequest, error)
	ClosePullRequest(ctx context.Context, ref gitwb.PullRequestRef, comment string) error
}

// openPR is a pull request being followed.
type openPR struct {
	ref gitwb.PullRequestRef
	url string
	// proposed are each Application's updates the pull request carries,
	// by key: from the base's values to the head's (gitwb.MergeProposal).
	proposed map[string][]gitwb.Update
	// notBefore defers the next look after a forge's rate limit.
	notBefore time.Time
	// settled are the Applications that asked for nothing since (their
	// last reconcile found them up to date, or without a spec).
	settled map[string]bool
}

// pullRequests are the open pull requests followed, by URL, and the
// versions whose pull request a person closed without merging.
type pullRequests struct {
	mu   sync.Mutex
	open map[string]*openPR
	// declined maps an Application key and image to the version its
	// closed pull request proposed: not proposed again (a newer one is).
	declined map[string]map[string]declined
	// loaded are the keys whose declined versions the write journal was
	// read for.
	loaded map[string]bool
}

type declined struct {
	to, url string
}

// reportPullRequest reports what one pull-request batch did for key and
// follows its pull request.
func (r *ImageReconciler) reportPullRequest(key string, o *collect.Outcome, res *collect.Result) {
	pr := res.PullRequest
	r.followPullRequest(key, o, res)
	var typ, reason, verb string
	switch res.PullRequestAction {
	case gitwb.PullRequestOpened:
		typ, reason, verb = triggers.EventPullRequestOpened, EventPullRequestOpened, "opened"
	case gitwb.PullRequestUpdated:
		typ, reason, verb = triggers.EventPullRequestUpdated, EventPullRequestUpdated, "updated"
	default:
		// Unchanged: the open pull request proposes these values already.
		r.Log.Debug("pull request already proposes the update", "app", key, "pullRequest", pr.URL)
		return
	}
	r.prCount(res.PullRequestAction)
	msg := fmt.Sprintf("%s (pull request #%d %s, %s into %s of %s)", describeUpdates(res.Updates), pr.Number, verb, pr.URL, pr.Base, res.Repo)
	r.Log.Info("pull request "+verb, "app", key, "pullRequest", pr.URL, "head", pr.Head, "commit", res.Commit)
	r.keyEvent(key, eventTypeNormal, reason, msg)
	r.prNotify(key, typ, pr, res.Commit, res.Updates)
}

// followPullRequest adds key's proposed updates to the pull request
// followed.
func (r *ImageReconciler) followPullRequest(key string, o *collect.Outcome, res *collect.Result) {
	ref, ok := prRef(o, res)
	if !ok {
		return
	}
	r.prs.mu.Lock()
	defer r.prs.mu.Unlock()
	if r.prs.open == nil {
		r.prs.open = map[string]*openPR{}
	}
	p := r.prs.open[res.PullRequest.URL]
	if p == nil {
		p = &openPR{ref: ref, url: res.PullRequest.URL, proposed: map[string][]gitwb.Update{}}
		r.prs.open[p.url] = p
	}
	p.proposed[key] = gitwb.MergeProposal(p.proposed[key], res.Updates)
	delete(p.settled, key)
}

// prSettled records that key asks for nothing now: up to date (the
// versions a pull request proposed run already, or the tag was withdrawn,
// or the policy changed), or no longer updated at all. A pull request
// none of whose Applications asks for anything is closed at the next
// look, unless it was merged.
func (r *ImageReconciler) prSettled(key string) {
	r.prs.mu.Lock()
	defer r.prs.mu.Unlock()
	for _, p := range r.prs.open {
		if _, ok := p.proposed[key]; ok {
			if p.settled == nil {
				p.settled = map[string]bool{}
			}
			p.settled[key] = true
		}
	}
}

// prForget drops what is kept of key, an Application that is gone: its
// declined versions, and its part in the open pull requests (prSettled).
func (r *ImageReconciler) prForget(key string) {
	r.prSettled(key)
	r.prs.mu.Lock()
	delete(r.prs.declined, key)
	delete(r.prs.loaded, key)
	r.prs.mu.Unlock()
	r.newSaid(saidKey{saidDeclined, key}, "")
}

// prRef names the pull request of res by the change of o that wrote it.
func prRef(o *collect.Outcome, res *collect.Result) (gitwb.PullRequestRef, bool) {
	for i := range o.Changes {
		c := &o.Changes[i]
		if c.PullRequest != nil && gitwb.RepoID(c.RepoURL) == res.Repo {
			return gitwb.PullRequestRef{RepoURL: c.RepoURL, CredentialsSecret: c.CredentialsSecret, Project: c.Project,
				Forge: c.PullRequest.Forge, Number: res.PullRequest.Number}, true
		}
	}
	return gitwb.PullRequestRef{}, false
}

// RunPullRequests looks at the open pull requests every interval
// (DefaultPullRequestInterval when zero) until ctx ends.
func (r *ImageReconciler) RunPullRequests(ctx context.Context) error {
	if r.PullRequests == nil {
		<-ctx.Done()
		return nil
	}
	interval := r.PullRequestInterval
	if interval <= 0 {
		interval = DefaultPullRequestInterval
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			r.checkPullRequests(ctx)
		}
	}
}

// checkPullRequests asks the forge for each open pull request's state
// and follows what changed.
func (r *ImageReconciler) checkPullRequests(ctx context.Context) {
	r.prs.mu.Lock()
	var due []*openPR
	now := r.now()
	for _, p := range r.prs.open {
		if !now.Before(p.notBefore) {
			due = append(due, p)
		}
	}
	r.prs.mu.Unlock()
	// Side by side, a few at once: one team's slow or unreachable forge
	// does not hold the looks at another's pull requests.
	var looks errgroup.Group
	looks.SetLimit(prLookWorkers)
	for _, p := range due {
		looks.Go(func() error { r.lookAt(ctx, p); return nil })
	}
	_ = looks.Wait()
}

// prLookWorkers is how many open pull requests are looked at at once.
const prLookWorkers = 8

// lookAt asks the forge for p's state and follows what changed.
func (r *ImageReconciler) lookAt(ctx context.Context, p *openPR) {
	// The state first: a merge the Applications already run is
	// announced, not taken for a pull request nobody wants.
	got, err := r.PullRequests.PullRequestState(ctx, p.ref)
	if err != nil {
		r.prLookFailed(p, err)
		return
	}
	switch got.State {
	case forge.Merged:
		r.prDone(p)
		r.prMerged(ctx, p, got)
	case forge.Closed:
		r.prDone(p)
		r.prClosed(ctx, p, got)
	default:
		if why := r.unwanted(p); why != "" {
			r.closeUnwanted(ctx, p, why)
		}
	}
}

// prLookFailed logs a failed look at p; a rate limit defers the next.
func (r *ImageReconciler) prLookFailed(p *openPR, err error) {
	var rl *forge.RateLimitError
	if errors.As(err, &rl) {
		r.prs.mu.Lock()
		p.notBefore = r.now().Add(rl.RetryAfter)
		r.prs.mu.Unlock()
	}
	r.Log.Warn("could not look at a pull request; will look again", "pullRequest", p.url, "error", err)
}

// unwanted says why none of p's Applications wants it any more (each
// deleted, or asking for nothing since), "" while one does.
func (r *ImageReconciler) unwanted(p *openPR) string {
	if r.Queue == nil {
		return ""
	}
	r.prs.mu.Lock()
	keys := slices.Sorted(maps.Keys(p.proposed))
	settled := maps.Clone(p.settled)
	r.prs.mu.Unlock()
	var gone, done []string
	for _, k := range keys {
		switch {
		case r.Queue.App(k) == nil:
			gone = append(gone, k)
		case settled[k]:
			done = append(done, k)
		default:
			return ""
		}
	}
	var parts []string
	if len(gone) > 0 {
		parts = append(parts, "no longer exist: "+strings.Join(gone, ", "))
	}
	if len(done) > 0 {
		parts = append(parts, "ask for nothing any more (they run these versions or newer, the versions were withdrawn, or they are no longer updated): "+strings.Join(done, ", "))
	}
	return "the Applications it was opened for " + strings.Join(parts, "; ")
}

// closeUnwanted closes p, which no Application wants any more.
func (r *ImageReconciler) closeUnwanted(ctx context.Context, p *openPR, why string) {
	comment := "Closed by crowsnest: " + why + "."
	if err := r.PullRequests.ClosePullRequest(ctx, p.ref, comment); err != nil {
		r.prLookFailed(p, err)
		return
	}
	r.prDone(p)
	r.prCount("closed")
	r.Log.Info("pull request closed: no Application wants it", "pullRequest", p.url, "why", why)
}

func (r *ImageReconciler) prDone(p *openPR) {
	r.prs.mu.Lock()
	delete(r.prs.open, p.url)
	r.prs.mu.Unlock()
}

// prMerged reports a merged pull request: on-pr-merged and then
// image-updated with the merge commit for each Application, and has Argo
// CD look at the merge now.
func (r *ImageReconciler) prMerged(ctx context.Context, p *openPR, got *forge.PullRequest) {
	r.prCount("merged")
	commit := cmp.Or(got.MergeCommit, got.HeadSHA)
	r.Log.Info("pull request merged", "pullRequest", p.url, "mergeCommit", got.MergeCommit)
	for _, key := range slices.Sorted(maps.Keys(p.proposed)) {
		updates := p.proposed[key]
		r.keyEvent(key, eventTypeNormal, EventPullRequestMerged, fmt.Sprintf("%s (pull request #%d merged as %s into %s)",
			describeUpdates(updates), got.Number, shortSHA(commit), got.Base))
		r.prNotify(key, triggers.EventPullRequestMerged, got, commit, updates)
		r.GitWritten(key, commit, updates)
		if r.Refresher != nil {
			if err := r.Refresher.Refresh(ctx, key); err != nil {
				r.Log.Warn("could not ask Argo CD to refresh; it will see the merge at its next poll", "app", key, "error", err)
			}
		}
	}
}

// prClosed reports a pull request closed without merging, and remembers
// its versions as declined, in memory and in the write journal (a
// restart does not propose them again).
func (r *ImageReconciler) prClosed(ctx context.Context, p *openPR, got *forge.PullRequest) {
	r.prCount("closed")
	r.Log.Info("pull request closed without merging; its versions are not proposed again", "pullRequest", p.url)
	r.prs.mu.Lock()
	if r.prs.declined == nil {
		r.prs.declined = map[string]map[string]declined{}
	}
	for key, updates := range p.proposed {
		for i := range updates {
			if r.prs.declined[key] == nil {
				r.prs.declined[key] = map[string]declined{}
			}
			r.prs.declined[key][updates[i].Image] = declined{to: updates[i].To, url: p.url}
		}
	}
	r.prs.mu.Unlock()
	if r.Journal != nil {
		for _, key := range slices.Sorted(maps.Keys(p.proposed)) {
			ds := make([]journal.Declined, 0, len(p.proposed[key]))
			for i := range p.proposed[key] {
				u := &p.proposed[key][i]
				ds = append(ds, journal.Declined{Image: u.Image, To: u.To, URL: p.url})
			}
			if err := r.book().Decline(ctx, key, ds); err != nil {
				r.Log.Warn("recording declined versions failed; after a restart they may be proposed again", "app", key, "error", err)
			}
		}
	}
	for _, key := range slices.Sorted(maps.Keys(p.proposed)) {
		r.keyEvent(key, eventTypeWarning, EventPullRequestClosed, fmt.Sprintf("%s (pull request #%d closed without merging: nothing deployed)",
			describeUpdates(p.proposed[key]), got.Number))
		r.prNotify(key, triggers.EventPullRequestClosed, got, got.HeadSHA, p.proposed[key])
	}
}

// prNotify hands the notifier one pull-request event per update.
func (r *ImageReconciler) prNotify(key, typ string, pr *forge.PullRequest, commit string, updates []gitwb.Update) {
	if r.Notifier == nil || r.Queue == nil {
		return
	}
	app := r.Queue.App(key)
	if app == nil {
		return
	}
	for i := range updates {
		u := &updates[i]
		msg := fmt.Sprintf("Pull request #%d (%s into %s) %s.", pr.Number, pr.Head, pr.Base, strings.TrimPrefix(typ, "pr-"))
		r.Notifier.OnEvent(app, triggers.Event{Type: typ, Image: u.Image, From: u.From, To: u.To, Commit: commit, Time: r.now(),
			PullRequest: pr.URL, PullRequestNumber: pr.Number, Message: msg,
			ID: strings.Join([]string{typ, key, u.Image, u.To, pr.URL}, "|")})
	}
}

func (r *ImageReconciler) prCount(action string) {
	if r.Metrics != nil {
		r.Metrics.pullRequest(action)
	}
}

// describeUpdates says updates for an Event.
func describeUpdates(updates []gitwb.Update) string {
	lines := make([]string, len(updates))
	for i := range updates {
		u := &updates[i]
		lines[i] = fmt.Sprintf("%s: %s -> %s", u.Image, orNone(u.From), u.To)
	}
	if len(lines) == 0 {
		return "no new values"
	}
	return strings.Join(lines, "; ")
}

// declinedOf returns key's declined versions by image: those of this
// process, and at the first look those a previous one recorded in the
// write journal (one it cannot read is looked at again next time).
func (r *ImageReconciler) declinedOf(ctx context.Context, key string) map[string]declined {
	r.prs.mu.Lock()
	loaded := r.prs.loaded[key] || r.Journal == nil
	d := maps.Clone(r.prs.declined[key])
	r.prs.mu.Unlock()
	if loaded {
		return d
	}
	stored, err := r.book().DeclinedOf(ctx, key)
	if err != nil {
		r.Log.Warn("reading declined versions from the write journal failed; reading again at the next reconcile", "app", key, "error", err)
		return d
	}
	r.prs.mu.Lock()
	defer r.prs.mu.Unlock()
	if r.prs.loaded == nil {
		r.prs.loaded = map[string]bool{}
	}
	r.prs.loaded[key] = true
	for _, s := range stored {
		if r.prs.declined == nil {
			r.prs.declined = map[string]map[string]declined{}
		}
		if r.prs.declined[key] == nil {
			r.prs.declined[key] = map[string]declined{}
		}
		if _, ok := r.prs.declined[key][s.Image]; !ok {
			r.prs.declined[key][s.Image] = declined{to: s.To, url: s.URL}
		}
	}
	return maps.Clone(r.prs.declined[key])
}

// dropDeclined leaves out of key's changes the versions a person declined
// (their pull request closed without merging): proposing them again would
// reopen what was refused. A newer version is proposed as usual. Said
// once while it stays the same.
func (r *ImageReconciler) dropDeclined(ctx context.Context, key string, changes []imageupdate.Change) []imageupdate.Change {
	d := r.declinedOf(ctx, key)
	if len(d) == 0 {
		return changes
	}
	var kept []imageupdate.Change
	var said []string
	for i := range changes {
		c := &changes[i]
		if x, ok := d[c.Image]; ok && x.to == c.To {
			said = append(said, fmt.Sprintf("%s %s (declined in %s)", c.Image, c.To, x.url))
			continue
		}
		kept = append(kept, *c)
	}
	if what := strings.Join(said, "; "); r.newSaid(saidKey{saidDeclined, key}, what) {
		r.Log.Info("version not proposed again: its pull request was closed without merging; a newer one will be", "app", key, "images", what)
	}
	return kept
}
