package git

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"text/template"
	"time"

	"github.com/ProtonMail/go-crypto/openpgp"

	"github.com/crowsnest-dev/crowsnest/internal/backoff"
	"github.com/crowsnest-dev/crowsnest/writeback/forge"
)

// Writer defaults: a handful of clones covers the usual few GitOps
// repositories; five attempts with backoff from 500ms ride out a busy
// branch or a short server outage (about 7.5s of waiting in all) without
// holding a batch for long; two minutes bounds one clone, fetch or push
// of a large repository; ten seconds let a push under way at shutdown
// finish well inside Kubernetes' default 30s termination grace.
const (
	DefaultMaxRepos    = 16
	DefaultMaxAttempts = 5
	DefaultBackoff     = 500 * time.Millisecond
	DefaultMaxBackoff  = 10 * time.Second
	DefaultTimeout     = 2 * time.Minute
	DefaultPushGrace   = 10 * time.Second
	DefaultAuthorName  = "crowsnest"
	DefaultAuthorEmail = "crowsnest@localhost"
)

// Sentinel errors for callers to classify results.
var (
	// ErrPushFailed means every attempt to push a batch failed with a
	// retryable error; the controller may retry the batch later.
	ErrPushFailed = errors.New("git push failed after all attempts")
	// ErrAuth means the server refused the credentials; retrying with
	// the same ones cannot help.
	ErrAuth = errors.New("git server refused the credentials")
	// ErrUntrusted means the server's HTTPS certificate did not verify;
	// the same certificate comes back on every try.
	ErrUntrusted = errors.New("git server's certificate is not trusted (add its CA under git.tls.<host>.caFile or caData)")
	// ErrBranchNotFound means neither the target nor the base branch
	// exists on the remote.
	ErrBranchNotFound = errors.New("branch not found on the remote")
	// ErrInvalidChange is a change that cannot be applied as given
	// (bad path, bad branch template, missing file to edit).
	ErrInvalidChange = errors.New("invalid change")
)

// Target is the file an Application's overrides are written to.
type Target struct {
	Kind TargetKind
	// Path is where the file is: relative to Change.Path, or to the
	// repository root when it starts with "/". For kustomization, a
	// directory (kustomization.yaml is found in it) or a file; for
	// helmvalues, the values file (default values.yaml). Unused for
	// argocd-source, which is always .argocd-source-<app>.yaml in
	// Change.Path.
	Path string
}

// Change is what one Application needs written.
type Change struct {
	// App is the Application's name: the one in .argocd-source-<app>.yaml,
	// commit messages and branch templates.
	App string
	// Key names the Application unambiguously for the caller (the
	// controller's namespace/name: two namespaces may both hold a "web").
	// Updates, ChangeErrors and Result.Keys carry it back, so results are
	// attributed by Key, never by App. Empty means App.
	Key string
	// RepoURL may carry credentials (https://user:token@host/...); they
	// push this change when the CredentialsSource has none, and only the
	// changes whose URL carries the same: they are part of the batch's
	// key, as CredentialsSecret is.
	RepoURL string
	// CredentialsSecret is "namespace/name" of the Secret whose
	// credentials push this change (write-back-method git:secret:); ""
	// leaves them to the Writer's CredentialsSource. Changes naming
	// different Secrets are different batches: one Application's Secret
	// never pushes another's change.
	CredentialsSecret string
	// Project is the Application's AppProject ("default" when it names
	// none). Argo CD's repository Secrets scoped to a project push that
	// project's changes only, so changes of different projects are
	// different batches.
	Project string
	// Branch is "branch", or "base:target" to commit on top of base and
	// push to target (created from base when missing; target may be a
	// text/template over BranchData with a sha256 function). "" or
	// "HEAD" is the remote's default branch.
	Branch     string
	SourceType SourceType
	// Path is the Application source's path in the repository.
	Path   string
	Target Target
	// Scope is what the change may write (nil: Path alone); a target
	// outside it fails the change with ErrOutsideScope.
	Scope  *Scope
	Images []Image
	// PullRequest, when set, proposes the change for review: Branch is
	// then the pull request's base (no base:target), and the change is
	// committed on PullRequest.Head (Writer.Forges).
	PullRequest *PullRequest
}

// Result is what happened to one batch: one repository and branch.
type Result struct {
	// RepoURL is the repository's RepoID: without credentials.
	RepoURL string
	// Keys are the Keys of the changes in the batch (sorted, once each):
	// the Applications this result is about, whatever the branch or URL
	// spelling they asked for.
	Keys         []string
	Branch       string
	CommitSHA    string
	FilesChanged []string
	Updates      []Update
	// NoOp is true when every value was already as asked: nothing was
	// committed or pushed.
	NoOp bool
	// Failed lists the changes left out because they cannot be applied;
	// the others were committed. Err is set when all of them failed.
	Failed []*ChangeError
	// Attempts is how many times the batch was tried (1 without retries).
	Attempts int
	// PullRequest is a pull-request batch's pull request (nil when none
	// was needed: the base had every value) and PullRequestAction what
	// was done to it (PullRequestOpened, ...).
	PullRequest       *forge.PullRequest
	PullRequestAction string
	Err               error
}

// Writer writes changes to Git. The zero value needs only CacheDir; it is
// safe for concurrent use (batches for the same repository wait for each
// other).
type Writer struct {
	// CacheDir holds the clones; it is created if missing.
	CacheDir string
	// MaxRepos and MaxCacheBytes bound the cache (0: DefaultMaxRepos and
	// no size bound; negative MaxRepos: unbounded).
	MaxRepos      int
	MaxCacheBytes int64
	Credentials   CredentialsSource
	AuthorName    string
	AuthorEmail   string
	// Message is the commit message template (ParseMessage); nil is
	// DefaultMessage.
	Message *template.Template
	// PullRequestTitle and PullRequestBody are the pull request templates
	// (ParsePullRequestTemplate); nil is DefaultPullRequestTitle and
	// DefaultPullRequestBody. RegistryLinks gives the body's image
	// links; nil is WellKnownRegistryLink's.
	PullRequestTitle, PullRequestBody *template.Template
	RegistryLinks                     RegistryLinks
	// SignKey signs commits with OpenPGP when set (ReadSignKey).
	SignKey *openpgp.Entity
	// CommitMethod is CommitMethodGit ("" too) or CommitMethodAPI: the
	// commit is then made through the GitHub API (Forges must resolve
	// the repository to GitHub) and SignKey must be nil.
	CommitMethod string
	MaxAttempts  int
	Backoff      time.Duration
	MaxBackoff   time.Duration
	// Timeout bounds each network operation.
	Timeout time.Duration
	// PushGrace is how long a push already under way may go on after the
	// context of Apply ends (a shutdown), so that its answer, and not a
	// guess, says whether it landed; 0 is DefaultPushGrace, negative none.
	PushGrace time.Duration
	// TLS holds, per Git server host ("git.example.com" or
	// "git.example.com:8443", as in repository URLs, lower case), the
	// HTTPS trust for that server. Other hosts are verified against the
	// system roots.
	TLS map[string]TLS
	// Forges serves the pull requests of Changes with a PullRequest; nil
	// refuses such changes.
	Forges  Forges
	Metrics *Metrics
	Log     *slog.Logger

	cacheOnce sync.Once
	clones    *cache
}

func (w *Writer) cache() *cache {
	w.cacheOnce.Do(func() {
		maxRepos := w.MaxRepos
		if maxRepos == 0 {
			maxRepos = DefaultMaxRepos
		}
		w.clones = &cache{dir: w.CacheDir, maxRepos: maxRepos, maxBytes: w.MaxCacheBytes, metrics: w.Metrics}
	})
	return w.clones
}

// batch is the changes for one repository and target branch.
type batch struct {
	repoURL string
	secret  string      // Change.CredentialsSecret
	project string      // Change.Project
	creds   Credentials // from the URL, if it had any
	credsID string      // creds.id(): part of the batch's key
	base    string
	target  string
	pr      *PullRequest // the first change's: the batch key holds its key()
	changes []Change
	// invalid is set for a change refused before it could join a batch
	// (its branch cannot be read or rendered): a batch of its own that
	// fails without contacting anything, so it fails only itself.
	invalid *ChangeError
}

// Apply writes changes, grouped into one commit per repository and target
// branch, and returns a result per group, sorted by repository and
// branch. The error joins the groups' errors and the changes left out
// (Result.Failed); each Result carries its own. A change whose branch
// cannot be read or rendered is a result of its own, failed (Err and
// Failed): the other changes are written all the same.
func (w *Writer) Apply(ctx context.Context, changes []Change) ([]Result, error) {
	batches, err := w.group(changes)
	if err != nil {
		return nil, err
	}
	results := make([]Result, 0, len(batches))
	var errs []error
	for _, b := range batches {
		r := w.applyBatch(ctx, b)
		if r.Err != nil {
			errs = append(errs, fmt.Errorf("%s %s: %w", r.RepoURL, r.Branch, r.Err))
		} else {
			for _, f := range r.Failed {
				errs = append(errs, fmt.Errorf("%s %s: %w", r.RepoURL, r.Branch, f))
			}
		}
		results = append(results, r)
	}
	return results, errors.Join(errs...)
}

// group sorts changes into batches. It fails only when the Writer cannot
// write at all; a change that cannot join a batch is a batch of its own
// (batch.invalid).
func (w *Writer) group(changes []Change) ([]*batch, error) {
	if w.CacheDir == "" {
		return nil, errors.New("git writer: CacheDir is not set")
	}
	byKey := map[string]*batch{}
	var order []*batch
	for i := range changes {
		c := &changes[i]
		clean, creds := splitURL(c.RepoURL) // clean is RepoID(c.RepoURL)
		spec := c.Branch
		if spec == "" {
			spec = "HEAD"
		}
		c2 := *c
		c2.RepoURL, c2.Key = clean, c.key()
		base, target, err := splitBranch(spec, c)
		if c.PullRequest != nil {
			base, target, err = pullRequestBranches(spec, c.PullRequest)
		}
		if err != nil {
			err = fmt.Errorf("%w: %w", ErrInvalidChange, redact(err, creds.Password))
			order = append(order, &batch{repoURL: clean, target: spec, changes: []Change{c2},
				invalid: &ChangeError{App: c.App, Key: c2.Key, Err: err}})
			continue
		}
		// Credentials in the URL are part of the key, as a named Secret
		// and the AppProject (whose repository Secrets may be its own)
		// are: one Application's user:token@ pushes only the changes
		// whose URL carries the same, never another's change to the
		// same repository and branch.
		id := creds.id()
		k := clean + "\x00" + base + "\x00" + target + "\x00" + c.CredentialsSecret + "\x00" + c.Project + "\x00" + id + "\x00" + c.PullRequest.key()
		b := byKey[k]
		if b == nil {
			b = &batch{repoURL: clean, secret: c.CredentialsSecret, project: c.Project, creds: creds, credsID: id, base: base, target: target, pr: c.PullRequest}
			byKey[k] = b
			order = append(order, b)
		}
		b.changes = append(b.changes, c2)
	}
	slices.SortStableFunc(order, func(a, b *batch) int {
		return cmp.Or(cmp.Compare(a.repoURL, b.repoURL), cmp.Compare(a.target, b.target), cmp.Compare(a.base, b.base),
			cmp.Compare(a.secret, b.secret), cmp.Compare(a.project, b.project), cmp.Compare(a.credsID, b.credsID))
	})
	return order, nil
}

// key is the change's Key, or its App when the caller gave none.
func (c *Change) key() string { return cmp.Or(c.Key, c.App) }

// keys lists the Keys of the batch's changes, sorted, once each.
func (b *batch) keys() []string {
	out := make([]string, 0, len(b.changes))
	for i := range b.changes {
		out = append(out, b.changes[i].Key)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

func (w *Writer) log() *slog.Logger {
	if w.Log != nil {
		return w.Log
	}
	return slog.New(slog.DiscardHandler)
}

func (w *Writer) backoff(attempt int) time.Duration {
	d := cmp.Or(w.Backoff, DefaultBackoff)
	maxD := cmp.Or(w.MaxBackoff, DefaultMaxBackoff)
	// Jitter keeps two writers that lost the same race from meeting again.
	return backoff.Delay(d, maxD, attempt)
}

func (w *Writer) pushGrace() time.Duration {
	if w.PushGrace == 0 {
		return DefaultPushGrace
	}
	return max(w.PushGrace, 0)
}

// withGrace returns a context with parent's values that ends grace after
// parent does (at once without grace), or when stop is called.
func withGrace(parent context.Context, grace time.Duration) (ctx context.Context, stop func()) {
	if grace <= 0 {
		return context.WithCancel(parent)
	}
	ctx, cancel := context.WithCancelCause(context.WithoutCancel(parent))
	var (
		mu      sync.Mutex
		timer   *time.Timer
		stopped bool
	)
	unwatch := context.AfterFunc(parent, func() {
		mu.Lock()
		defer mu.Unlock()
		if !stopped {
			timer = time.AfterFunc(grace, func() { cancel(context.Cause(parent)) })
		}
	})
	return ctx, func() {
		unwatch()
		mu.Lock()
		stopped = true
		if timer != nil {
			timer.Stop()
		}
		mu.Unlock()
		cancel(context.Canceled)
	}
}
