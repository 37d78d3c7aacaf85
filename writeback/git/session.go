package git

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	gogit "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/storer"
	"github.com/go-git/go-git/v5/plumbing/transport"

	"github.com/crowsnest-dev/crowsnest/internal/backoff"
	"github.com/crowsnest-dev/crowsnest/writeback/forge"
)

const remoteName = "origin"

// session is one batch's work on its clone.
type session struct {
	w     *Writer
	b     *batch
	dir   string
	creds Credentials
	// authMethod is chosen once per batch from creds and the URL.
	authMethod transport.AuthMethod
	// tls is the HTTPS trust for the repository's host.
	tls     TLS
	repo    *gogit.Repository
	fresh   bool // cloned in this attempt: no fetch needed
	corrupt bool // re-clone on the next attempt
	// fetchFailures counts fetches failed in a row; after two the clone
	// itself is suspect and is made again.
	fetchFailures int
	// unacked are this batch's pushes that failed without being refused:
	// the server may have taken one and lost only its answer, or still be
	// taking it while a retry runs. Each later attempt, and confirm when
	// the batch is given up, looks for them on the remote first, or the
	// change would look already made and its result would be lost.
	unacked []unackedPush
	// pr is the open pull request of a pull-request batch (looked up
	// once, nil when none), rebuild says the head is made again from
	// the base (no pull request is open), lastMsg and lastUpdates are
	// the last commit's message and updates.
	pr          *forge.PullRequest
	looked      bool
	rebuild     bool
	lastMsg     string
	lastUpdates []Update
	// proposing is this batch's commit pushed by an attempt whose pull
	// request's step failed after the push: the next attempt finds it on
	// the head and proposes it as this write's commit, rather than
	// finding nothing left to commit (no commit, no updates reported, an
	// open pull request's title and body left as they were).
	proposing *unackedPush
}

// unackedPush is a push whose answer was lost (or, as
// session.proposing, one whose pull request is still to be proposed),
// with what its commit holds.
type unackedPush struct {
	sha     plumbing.Hash
	updates []Update
	files   []string
	failed  []*ChangeError
}

// report puts p's commit in res as the one the batch wrote.
func (p *unackedPush) report(res *Result) {
	res.CommitSHA, res.Updates, res.FilesChanged, res.Failed, res.NoOp = p.sha.String(), p.updates, p.files, p.failed, false
}

// findUnacked reports in res the push of s.unacked that the remote head
// base has, if one has landed.
func (s *session) findUnacked(base plumbing.Hash, res *Result) bool {
	for i := len(s.unacked) - 1; i >= 0; i-- {
		p := s.unacked[i]
		if s.landed(base, p.sha) {
			p.report(res)
			s.unacked = nil
			return true
		}
	}
	return false
}

// confirmTimeout bounds confirm's fetch: it runs when the batch is given
// up, often at shutdown, and a few seconds tell whether a push landed.
const confirmTimeout = 15 * time.Second

// maxLandedSearch bounds the commits walked from the remote head when
// looking for a push whose answer was lost; other pushes since ours are
// few, so ours is near the top if it landed.
const maxLandedSearch = 1000

// errTerminal marks errors retrying cannot fix.
type errTerminal struct{ err error }

func (e errTerminal) Error() string { return e.err.Error() }
func (e errTerminal) Unwrap() error { return e.err }

func terminal(err error) error { return errTerminal{err} }

// openSession gets b's credentials and locks its clone; release unlocks
// it.
func (w *Writer) openSession(ctx context.Context, b *batch) (s *session, release func(), err error) {
	creds := b.creds
	if w.Credentials != nil {
		c, ok, err := w.Credentials.Credentials(WithProject(WithCredentialsSecret(ctx, b.secret), b.project), b.repoURL)
		if err != nil {
			return nil, nil, fmt.Errorf("getting credentials: %w", err)
		}
		if ok {
			creds = c
		}
	}
	if err := os.MkdirAll(w.CacheDir, 0o700); err != nil {
		return nil, nil, fmt.Errorf("creating cache dir: %w", err)
	}
	dir, release, err := w.cache().acquire(ctx, b.repoURL)
	if err != nil {
		return nil, nil, err
	}
	auth, err := creds.authFor(b.repoURL, cmp.Or(w.Timeout, DefaultTimeout))
	if err != nil {
		release()
		return nil, nil, redact(err, creds.secrets()...)
	}
	return &session{w: w, b: b, dir: dir, creds: creds, authMethod: auth, tls: w.tlsFor(b.repoURL)}, release, nil
}

func (w *Writer) applyBatch(ctx context.Context, b *batch) Result {
	res := Result{RepoURL: b.repoURL, Branch: b.target, Keys: b.keys()}
	if b.invalid != nil {
		res.Failed, res.Err = []*ChangeError{b.invalid}, b.invalid
		return res
	}
	s, release, err := w.openSession(ctx, b)
	if err != nil {
		res.Err = err
		return res
	}
	defer release()
	creds := s.creds
	maxAttempts := cmp.Or(w.MaxAttempts, DefaultMaxAttempts)
	for attempt := 1; ; attempt++ {
		res.Attempts = attempt
		err := s.attempt(ctx, &res)
		if err == nil {
			return res
		}
		err = redact(remoteError(err), creds.secrets()...)
		var term errTerminal
		switch {
		case errors.As(err, &term):
			// A refusal (credentials, missing repository) is an answer:
			// nothing landed.
			res.Err = err
			return res
		case rateLimitedFor(err) > cmp.Or(w.MaxBackoff, DefaultMaxBackoff):
			// A forge asks for a longer wait than a retry here takes:
			// the clone is not held that long. The caller tries again
			// after the wait (forge.RateLimitError in res.Err); what is
			// pushed stays on the head.
			res.Err = err
			return res
		case ctx.Err() == nil && attempt < maxAttempts:
			w.Metrics.retry()
			w.log().Debug("git write-back retry", "repo", b.repoURL, "branch", b.target, "attempt", attempt, "err", err)
			serr := backoff.Sleep(ctx, max(w.backoff(attempt), rateLimitedFor(err)))
			if serr == nil {
				continue
			}
			err = fmt.Errorf("%w (before attempt %d; the last one: %w)", serr, attempt+1, err)
		case ctx.Err() == nil:
			err = fmt.Errorf("%w (%d attempts): %w", ErrPushFailed, attempt, err)
		}
		// Giving up (attempts spent, or ctx ended): a push whose answer
		// was lost may still have landed, and the remote says which. Not
		// for a pull request: its commit landed on the head is not
		// written until the pull request proposes it, which the next
		// write does.
		if s.b.pr == nil && s.confirm(ctx, &res) {
			return res
		}
		res.Err = err
		return res
	}
}

// confirm looks on the remote for the push whose answer was lost
// (s.unacked), when the batch is given up without a later attempt to find
// it: the batch's context ended (a shutdown) or its attempts ran out. It
// reports the commit as landed when the remote's branch has it. It has a
// short deadline of its own, detached from ctx, which may be the one that
// ended.
func (s *session) confirm(ctx context.Context, res *Result) bool {
	if len(s.unacked) == 0 || s.repo == nil {
		return false
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), min(cmp.Or(s.w.Timeout, DefaultTimeout), confirmTimeout))
	defer cancel()
	log := s.w.log().With("repo", s.b.repoURL, "branch", s.b.target)
	if err := s.fetch(cctx); err != nil {
		log.Warn("git write-back: could not tell whether a push whose answer was lost landed; reporting it failed", "err", redact(err, s.creds.secrets()...))
		return false
	}
	ref, err := s.repo.Reference(plumbing.NewRemoteReferenceName(remoteName, s.b.target), true)
	if err != nil || !s.findUnacked(ref.Hash(), res) {
		log.Info("git write-back: no push whose answer was lost is on the remote")
		return false
	}
	log.Info("git write-back pushed; the server's answer had been lost and the remote has the commit", "commit", res.CommitSHA)
	return true
}

// attempt brings the clone to the remote's head of the branch, applies the
// batch, commits and pushes. Errors not wrapped in errTerminal are retried.
func (s *session) attempt(ctx context.Context, res *Result) error {
	base, err := s.sync(ctx)
	res.Branch = s.b.target
	if err != nil {
		return err
	}
	if s.findUnacked(base, res) {
		s.w.log().Info("git write-back pushed; the server's answer had been lost", "repo", s.b.repoURL, "branch", s.b.target, "commit", res.CommitSHA)
		return s.proposePushed(ctx, res)
	}
	if p := s.proposing; p != nil && s.landed(base, p.sha) {
		p.report(res)
		return s.proposePushed(ctx, res)
	}
	wt, err := s.checkout(base, false)
	if err != nil {
		s.corrupt = true
		return err
	}
	updates, files, failed, err := s.w.edit(s.dir, s.b.changes)
	if err != nil {
		s.corrupt = true
		return err
	}
	res.Updates, res.FilesChanged, res.Failed = updates, files, failed
	if len(files) == 0 {
		if len(failed) == len(s.b.changes) {
			errs := make([]error, len(failed))
			for i, f := range failed {
				errs[i] = f
			}
			return terminal(errors.Join(errs...))
		}
		// Nothing to commit; a target branch that does not exist yet is
		// not created for nothing either.
		res.NoOp, res.CommitSHA = true, ""
		return s.proposeIfAsked(ctx, res)
	}
	if s.w.CommitMethod == CommitMethodAPI {
		sha, err := s.commitThroughAPI(ctx, base, updates, files, failed)
		if err != nil {
			return err
		}
		return s.committed(ctx, res, sha)
	}
	for _, f := range files {
		// Every path in files was just written by edit: skip the status
		// check, which walks the whole worktree per call (quadratic over a
		// batch of hundreds of files in a monorepo).
		if err := wt.AddWithOptions(&gogit.AddOptions{Path: f, SkipStatus: true}); err != nil {
			s.corrupt = true
			return fmt.Errorf("staging %s: %w", f, err)
		}
	}
	sha, err := s.commit(wt, updates)
	if err != nil {
		s.corrupt = true
		return err
	}
	if err := s.checkProposal(updates); err != nil {
		return err
	}
	if err := s.push(ctx); err != nil {
		if !isRejected(err) {
			s.unacked = append(s.unacked, unackedPush{sha: plumbing.NewHash(sha), updates: updates, files: files, failed: failed})
		}
		return err
	}
	return s.committed(ctx, res, sha)
}

// committed reports sha, the commit this attempt put on the target branch
// (pushed or made through the API), in res and proposes it.
func (s *session) committed(ctx context.Context, res *Result, sha string) error {
	res.CommitSHA = sha
	s.w.log().Info("git write-back pushed", "repo", s.b.repoURL, "branch", s.b.target, "commit", sha, "files", len(res.FilesChanged), "updates", len(res.Updates), "method", cmp.Or(s.w.CommitMethod, CommitMethodGit))
	// The head is this batch's now: a retry of the pull request's step
	// goes on top of it.
	s.rebuild = false
	return s.proposePushed(ctx, res)
}

// proposePushed proposes the commit res reports, which this batch has
// pushed; should the pull request's step fail, the next attempt proposes
// it again (session.proposing).
func (s *session) proposePushed(ctx context.Context, res *Result) error {
	if err := s.proposeIfAsked(ctx, res); err != nil {
		s.proposing = &unackedPush{sha: plumbing.NewHash(res.CommitSHA), updates: res.Updates, files: res.FilesChanged, failed: res.Failed}
		return err
	}
	s.proposing = nil
	return nil
}

// proposeIfAsked opens or updates the pull request of a pull-request
// batch once its commit is on the head: not when nothing was committed
// and none is open (the base has every value already).
func (s *session) proposeIfAsked(ctx context.Context, res *Result) error {
	if s.b.pr == nil || (res.NoOp && s.pr == nil && s.lastMsg == "") {
		return nil
	}
	return s.propose(ctx, res)
}

// checkProposal renders the pull request of a pull-request batch before
// its commit is pushed: a template that fails fails the write before the
// head moves, not after.
func (s *session) checkProposal(updates []Update) error {
	if s.b.pr == nil {
		return nil
	}
	if _, _, err := s.proposalFor(updates, forge.DefaultBodyLimit); err != nil {
		return terminal(err)
	}
	return nil
}

// sync brings the clone to the remote's branches and returns the remote
// head the batch goes on (baseCommit).
func (s *session) sync(ctx context.Context) (plumbing.Hash, error) {
	if err := s.open(ctx); err != nil {
		return plumbing.ZeroHash, err
	}
	if !s.fresh {
		if err := s.fetch(ctx); err != nil {
			s.fetchFailures++
			s.corrupt = s.fetchFailures >= 2
			return plumbing.ZeroHash, err
		}
	}
	s.fresh, s.fetchFailures = false, 0
	if err := s.resolveDefault(ctx); err != nil {
		return plumbing.ZeroHash, err
	}
	if s.b.pr != nil && !s.looked {
		if err := s.openPullRequest(ctx); err != nil {
			return plumbing.ZeroHash, err
		}
		s.looked = true
	}
	return s.baseCommit(ctx)
}

// landed reports whether commit sha is the remote head base or among its
// recent ancestors.
func (s *session) landed(base, sha plumbing.Hash) bool {
	head, err := s.repo.CommitObject(base)
	if err != nil {
		return false
	}
	iter := object.NewCommitPreorderIter(head, nil, nil)
	defer iter.Close()
	found, walked := false, 0
	_ = iter.ForEach(func(c *object.Commit) error {
		walked++
		if c.Hash == sha {
			found = true
		}
		if found || walked >= maxLandedSearch {
			return storer.ErrStop
		}
		return nil
	})
	return found
}

func (s *session) auth() transport.AuthMethod { return s.authMethod }

func (s *session) opCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, cmp.Or(s.w.Timeout, DefaultTimeout))
}

// open uses the cached clone when it is sound and clones otherwise.
func (s *session) open(ctx context.Context) error {
	if s.repo != nil && !s.corrupt {
		return nil
	}
	if !s.corrupt {
		if repo, err := s.verify(); err == nil {
			s.repo = repo
			return nil
		} else if !errors.Is(err, os.ErrNotExist) {
			s.w.log().Warn("git cache unusable, cloning again", "repo", s.b.repoURL, "err", err)
		}
	}
	s.repo, s.corrupt = nil, false
	if err := os.RemoveAll(s.dir); err != nil {
		return terminal(fmt.Errorf("removing broken clone: %w", err))
	}
	ctx, cancel := s.opCtx(ctx)
	defer cancel()
	start := time.Now()
	repo, err := gogit.PlainCloneContext(ctx, s.dir, false, &gogit.CloneOptions{
		URL:             s.b.repoURL,
		RemoteName:      remoteName,
		Auth:            s.auth(),
		CABundle:        s.tls.CABundle,
		InsecureSkipTLS: s.tls.InsecureSkipVerify,
		NoCheckout:      true,
		Tags:            gogit.NoTags,
	})
	s.w.Metrics.op(opClone, start, err)
	if err != nil {
		_ = os.RemoveAll(s.dir)
		return classify("cloning", err)
	}
	s.repo, s.fresh = repo, true
	return nil
}

// verify opens the clone in s.dir and checks it is a clone of the right
// repository whose refs point at objects it has.
func (s *session) verify() (*gogit.Repository, error) {
	if _, err := os.Stat(s.dir); err != nil {
		return nil, err
	}
	repo, err := gogit.PlainOpen(s.dir)
	if err != nil {
		return nil, err
	}
	rem, err := repo.Remote(remoteName)
	if err != nil {
		return nil, err
	}
	if urls := rem.Config().URLs; len(urls) != 1 || urls[0] != s.b.repoURL {
		return nil, fmt.Errorf("clone is of another repository")
	}
	refs, err := repo.References()
	if err != nil {
		return nil, err
	}
	defer refs.Close()
	return repo, refs.ForEach(func(r *plumbing.Reference) error {
		if r.Type() != plumbing.HashReference || !r.Name().IsRemote() {
			return nil
		}
		_, err := repo.CommitObject(r.Hash())
		return err
	})
}

// branchesRefSpec fetches every branch, forced, as the remote has it.
const branchesRefSpec config.RefSpec = "+refs/heads/*:refs/remotes/origin/*"

// fetch fetches every branch (forced, pruned).
func (s *session) fetch(ctx context.Context) error {
	return s.fetchRefs(ctx, branchesRefSpec)
}

// fetchRefs fetches specs from the remote (pruned), within the session's
// per-operation time limit.
func (s *session) fetchRefs(ctx context.Context, specs ...config.RefSpec) error {
	ctx, cancel := s.opCtx(ctx)
	defer cancel()
	start := time.Now()
	err := s.repo.FetchContext(ctx, &gogit.FetchOptions{
		RemoteName:      remoteName,
		RefSpecs:        specs,
		Auth:            s.auth(),
		CABundle:        s.tls.CABundle,
		InsecureSkipTLS: s.tls.InsecureSkipVerify,
		Prune:           true,
		Tags:            gogit.NoTags,
	})
	if errors.Is(err, gogit.NoErrAlreadyUpToDate) {
		err = nil
	}
	s.w.Metrics.op(opFetch, start, err)
	return classify("fetching", err)
}

// resolveDefault names the remote's default branch where the batch says
// HEAD.
func (s *session) resolveDefault(ctx context.Context) error {
	if s.b.base != "HEAD" {
		return nil
	}
	name, err := s.defaultBranch(ctx)
	if err != nil {
		return err
	}
	if s.b.target == "HEAD" {
		s.b.target = name
	}
	s.b.base = name
	return nil
}

// baseCommit is the remote head the batch goes on: the target branch, or
// the base branch when the target does not exist yet or is rebuilt (a
// pull request's head without an open pull request).
func (s *session) baseCommit(ctx context.Context) (plumbing.Hash, error) {
	if err := s.resolveDefault(ctx); err != nil {
		return plumbing.ZeroHash, err
	}
	names := []string{s.b.target, s.b.base}
	if s.rebuild {
		names = names[1:]
	}
	for _, name := range names {
		ref, err := s.repo.Reference(plumbing.NewRemoteReferenceName(remoteName, name), true)
		if err == nil {
			return ref.Hash(), nil
		}
	}
	return plumbing.ZeroHash, terminal(fmt.Errorf("%w: %s", ErrBranchNotFound, s.b.base))
}

// defaultBranch asks the remote where its HEAD points.
func (s *session) defaultBranch(ctx context.Context) (string, error) {
	rem, err := s.repo.Remote(remoteName)
	if err != nil {
		return "", err
	}
	ctx, cancel := s.opCtx(ctx)
	defer cancel()
	refs, err := rem.ListContext(ctx, &gogit.ListOptions{
		Auth: s.auth(), CABundle: s.tls.CABundle, InsecureSkipTLS: s.tls.InsecureSkipVerify,
	})
	if err != nil {
		return "", classify("listing remote refs", err)
	}
	for _, r := range refs {
		if r.Name() == plumbing.HEAD && r.Type() == plumbing.SymbolicReference {
			return r.Target().Short(), nil
		}
	}
	return "", terminal(fmt.Errorf("%w: the remote has no default branch", ErrBranchNotFound))
}

// checkout points the local target branch at base and makes the work
// tree exactly that commit (no leftovers from an earlier attempt).
// detached checks base out without touching any branch (Plan).
func (s *session) checkout(base plumbing.Hash, detached bool) (*gogit.Worktree, error) {
	wt, err := s.repo.Worktree()
	if err != nil {
		return nil, err
	}
	opts := &gogit.CheckoutOptions{Hash: base, Force: true}
	if !detached {
		branch := plumbing.NewBranchReferenceName(s.b.target)
		if err := s.repo.Storer.SetReference(plumbing.NewHashReference(branch, base)); err != nil {
			return nil, err
		}
		opts = &gogit.CheckoutOptions{Branch: branch, Force: true}
	}
	if err := wt.Checkout(opts); err != nil {
		return nil, fmt.Errorf("checking out %s: %w", s.b.target, err)
	}
	if err := wt.Clean(&gogit.CleanOptions{Dir: true}); err != nil {
		return nil, fmt.Errorf("cleaning work tree: %w", err)
	}
	return wt, nil
}

// message is the commit message of updates.
func (s *session) message(updates []Update) (string, error) {
	apps := []string{}
	for i := range updates {
		if !slices.Contains(apps, updates[i].App) {
			apps = append(apps, updates[i].App)
		}
	}
	slices.Sort(apps)
	return renderMessage(s.w.Message, MessageData{RepoURL: s.b.repoURL, Branch: s.b.target, Apps: apps, Updates: updates})
}

func (s *session) commit(wt *gogit.Worktree, updates []Update) (string, error) {
	msg, err := s.message(updates)
	if err != nil {
		return "", terminal(err)
	}
	sig := &object.Signature{
		Name:  cmp.Or(s.w.AuthorName, DefaultAuthorName),
		Email: cmp.Or(s.w.AuthorEmail, DefaultAuthorEmail),
		When:  time.Now(),
	}
	start := time.Now()
	h, err := wt.Commit(msg, &gogit.CommitOptions{Author: sig, Committer: sig, SignKey: s.w.SignKey})
	s.w.Metrics.op(opCommit, start, err)
	if err != nil {
		return "", fmt.Errorf("committing: %w", err)
	}
	s.lastMsg, s.lastUpdates = msg, updates
	return h.String(), nil
}

// push sends the target branch. A push under way when ctx ends gets the
// writer's PushGrace to finish: its answer beats a guess.
func (s *session) push(ctx context.Context) error {
	ctx, stop := withGrace(ctx, s.w.pushGrace())
	defer stop()
	ctx, cancel := s.opCtx(ctx)
	defer cancel()
	ref := plumbing.NewBranchReferenceName(s.b.target)
	opts := &gogit.PushOptions{
		RemoteName:      remoteName,
		RefSpecs:        []config.RefSpec{config.RefSpec(ref + ":" + ref)},
		Auth:            s.auth(),
		CABundle:        s.tls.CABundle,
		InsecureSkipTLS: s.tls.InsecureSkipVerify,
	}
	if s.rebuild {
		// A pull request's head made again from the base replaces what
		// the remote has, and only that: a push to it since the fetch
		// makes this one fail, and the batch is tried again.
		if old, err := s.repo.Reference(plumbing.NewRemoteReferenceName(remoteName, s.b.target), true); err == nil {
			opts.RefSpecs = []config.RefSpec{config.RefSpec("+" + ref + ":" + ref)}
			opts.ForceWithLease = &gogit.ForceWithLease{RefName: ref, Hash: old.Hash()}
		}
	}
	start := time.Now()
	err := s.repo.PushContext(ctx, opts)
	if errors.Is(err, gogit.NoErrAlreadyUpToDate) {
		err = nil
	}
	s.w.Metrics.op(opPush, start, err)
	return classify("pushing", err)
}

// classify wraps err with what was being done and marks the errors
// retrying cannot fix: refused credentials, a missing repository.
func classify(doing string, err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, transport.ErrAuthenticationRequired), errors.Is(err, transport.ErrAuthorizationFailed), sshAuthRefused(err):
		return terminal(fmt.Errorf("%s: %w: %w", doing, ErrAuth, err))
	case errors.Is(err, transport.ErrRepositoryNotFound), errors.Is(err, transport.ErrEmptyRemoteRepository), errors.Is(err, ErrRefsTooLarge):
		return terminal(fmt.Errorf("%s: %w", doing, err))
	case untrustedCertificate(err):
		// The same certificate comes back on every try.
		return terminal(fmt.Errorf("%s: %w: %w", doing, ErrUntrusted, err))
	default:
		return fmt.Errorf("%s: %w", doing, err)
	}
}

// resultOf names an operation's outcome for metrics.
func resultOf(err error) string {
	switch {
	case err == nil:
		return resultSuccess
	case errors.Is(err, transport.ErrAuthenticationRequired), errors.Is(err, transport.ErrAuthorizationFailed), sshAuthRefused(err):
		return resultAuth
	case isRejected(err):
		return resultRejected
	default:
		return resultError
	}
}

// isRejected says whether a push lost a race: go-git's own fast-forward
// check, or the server's (or the GitHub API's) refusal to move the ref.
func isRejected(err error) bool {
	msg := err.Error()
	return errors.Is(err, gogit.ErrForceNeeded) || errors.Is(err, forge.ErrBranchMoved) || strings.Contains(msg, "non-fast-forward") ||
		strings.Contains(msg, "command error on refs/")
}
