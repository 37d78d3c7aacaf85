package git

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/crowsnest-dev/crowsnest/writeback/forge"
	"github.com/crowsnest-dev/crowsnest/writeback/git/branchtmpl"
)

// PullRequest proposes a change for review instead of pushing it to its
// branch: the change is committed on Head, a branch of crowsnest's own,
// and a pull request from Head into the change's branch (the base) is
// opened, or brought up to date when one is open. Changes for the same
// repository, base and Head are one commit and one pull request.
type PullRequest struct {
	// Head is the pull request's branch. While a pull request from it is
	// open, commits go on top of it; otherwise it is rebuilt from the
	// base (a force push with a lease), so a merged or closed pull
	// request's commits never come back in the next one.
	//
	// Changes of different AppProjects or credentials are different
	// batches: the caller gives each its own Head (the project in its
	// name), or their commits meet on one branch and one tenant's pull
	// request, opened with its credentials, carries another's change.
	Head string
	// Forge is the kind of forge the change's settings name ("" for
	// none): forge.Resolver.Resolve's kind.
	Forge string
	// What reviewers see besides the title and body (the commit
	// message's first line and the rest): forge.Proposal's.
	Labels, Reviewers, Assignees []string
	Draft, AutoMerge             bool
}

// key identifies what a pull request asks for, for the batch key: changes
// asking differently are different batches.
func (p *PullRequest) key() string {
	if p == nil {
		return ""
	}
	return fmt.Sprintf("%s\x00%s\x00%q\x00%q\x00%q\x00%t\x00%t", p.Head, p.Forge, p.Labels, p.Reviewers, p.Assignees, p.Draft, p.AutoMerge)
}

// Forges finds the forge that serves a repository, and its pull-request
// API with the credentials that push to it (writeback/forge's Resolver).
type Forges interface {
	Forge(req ForgeRequest) (forge.Forge, forge.Repo, error)
}

// ForgeRequest is what a Forges is asked for: the forge of RepoURL (Kind
// as the change's settings name it, "" for none), its API called with
// Creds and trusted as TLS says for the repository's host.
type ForgeRequest struct {
	RepoURL, Kind string
	Creds         Credentials
	TLS           TLS
	// Transport, when set, carries the forge's requests instead (a dry
	// run's recorder); TLS is then not used.
	Transport http.RoundTripper
}

// PullRequest actions (Result.PullRequestAction).
const (
	PullRequestOpened    = "opened"
	PullRequestUpdated   = "updated"
	PullRequestUnchanged = "unchanged"
)

// ErrNoForge is a pull-request change for a repository whose forge is not
// known or not configured.
var ErrNoForge = errors.New("no forge configured for the repository")

// errPullRequestBranch refuses "base:target" in pull-request mode, as
// argocd-image-updater does: the pull request's branch is crowsnest's.
var errPullRequestBranch = errors.New("pull-request mode takes only the base branch (e.g. \"main\"), not base:target")

// pullRequestBranches returns the base and head of a pull-request change.
func pullRequestBranches(spec string, pr *PullRequest) (base, head string, err error) {
	if strings.Contains(spec, ":") {
		return "", "", fmt.Errorf("branch %q: %w", spec, errPullRequestBranch)
	}
	if err := branchtmpl.CheckName(spec); err != nil {
		return "", "", err
	}
	if err := branchtmpl.CheckName(pr.Head); err != nil {
		return "", "", fmt.Errorf("pull request head: %w", err)
	}
	if pr.Head == spec {
		return "", "", fmt.Errorf("pull request head %q is the base branch", pr.Head)
	}
	return spec, pr.Head, nil
}

// openPullRequest looks up the open pull request of b, before its write:
// without one, the head is rebuilt from the base.
func (s *session) openPullRequest(ctx context.Context) error {
	f, r, err := s.w.forge(s.b, s.creds)
	if err != nil {
		return err
	}
	if c, ok := f.(forge.ProposalChecker); ok {
		// Refused before anything is pushed, not at each retry after.
		if err := c.Check(r, s.proposal("", "")); err != nil {
			return forgeError("checking the pull request's settings", err)
		}
	}
	pr, err := f.Find(ctx, r, s.b.target, s.b.base)
	if err != nil {
		return forgeError("finding the open pull request", err)
	}
	// Without an open pull request the head is made again from the
	// base, unless this write pushed it (a look again after a failed
	// open): it is this write's commit still to propose.
	s.pr, s.rebuild = pr, pr == nil && s.proposing == nil
	return nil
}

// propose opens the pull request of a written batch, or brings the open
// one's title and body up to date with what it now changes.
func (s *session) propose(ctx context.Context, res *Result) error {
	f, r, err := s.w.forge(s.b, s.creds)
	if err != nil {
		return err
	}
	if s.pr != nil && res.NoOp {
		res.PullRequest, res.PullRequestAction = s.pr, PullRequestUnchanged
		return nil
	}
	updates := res.Updates
	if len(updates) == 0 {
		// A commit an earlier attempt pushed, proposed now.
		updates = s.lastUpdates
	}
	title, body, edit, err := s.proposalText(updates, forge.BodyLimit(f))
	if err != nil {
		return terminal(err)
	}
	if s.pr == nil {
		pr, err := f.Open(ctx, r, s.proposal(title, body))
		if pr != nil {
			s.pr = pr
			res.PullRequest, res.PullRequestAction = pr, PullRequestOpened
		}
		switch {
		case err != nil && pr == nil:
			// The forge may have opened it all the same (a 5xx after
			// the fact): the next attempt looks for it again rather
			// than open a second.
			s.looked = false
			return forgeError("opening the pull request", err)
		case err != nil:
			// Opened, and a step after it (labels, reviewers,
			// assignees, auto-merge) refused, as argocd-image-updater
			// takes a labelling failure: the review it asks for is
			// there, failing the write would only repeat the push.
			s.w.log().Warn("pull request opened, but a setting of it was refused", "pullRequest", pr.URL, "error", err)
		}
		return nil
	}
	if !edit {
		// The push moved the head; the title and body still say it.
		pr := *s.pr
		pr.HeadSHA = res.CommitSHA
		res.PullRequest, res.PullRequestAction = &pr, PullRequestUpdated
		return nil
	}
	pr, err := f.Edit(ctx, r, s.pr.Number, title, body)
	if err != nil {
		return forgeError("updating the pull request", err)
	}
	res.PullRequest, res.PullRequestAction = pr, PullRequestUpdated
	return nil
}

// forge returns the forge of b's repository.
func (w *Writer) forge(b *batch, creds Credentials) (forge.Forge, forge.Repo, error) {
	if w.Forges == nil {
		return nil, forge.Repo{}, terminal(fmt.Errorf("%w: %s", ErrNoForge, b.repoURL))
	}
	f, r, err := w.Forges.Forge(ForgeRequest{RepoURL: b.repoURL, Kind: b.pr.Forge, Creds: creds, TLS: w.tlsFor(b.repoURL)})
	if err != nil {
		return nil, forge.Repo{}, terminal(fmt.Errorf("%w: %w", ErrNoForge, err))
	}
	return f, r, nil
}

// forgeError marks a forge's refusal terminal: retrying now cannot change
// it (a rate limit is not one: the batch is tried again after its wait).
func forgeError(doing string, err error) error {
	err = fmt.Errorf("%s: %w", doing, err)
	if forge.IsPermanent(err) {
		return terminal(err)
	}
	return err
}

// TokenForges is Forges from a forge.Resolver: the forge's API is called
// with the password of the credentials that push (an access token, as in
// an Argo CD repository Secret for https), trusting what the Git server's
// TLS settings trust. Credentials without one (an SSH key) call it as the
// GitHub App Apps lends for the host, if any.
type TokenForges struct {
	Resolver *forge.Resolver
	// Apps, when set, lends the operator's GitHub App for the API of the
	// hosts it names, to credentials without a token (forgeapp.go).
	Apps AppLender

	mu         sync.Mutex
	transports map[string]http.RoundTripper // by TLS settings
	apps       map[string]*forge.GitHub     // by app, key and TLS settings
}

// errNoToken refuses a pull request whose credentials cannot call the
// forge's API, and no app is lent for its host.
var errNoToken = errors.New("a pull request needs an access token: the repository's credentials have no password (SSH keys cannot call a forge's API)")

// Forge implements Forges.
func (t *TokenForges) Forge(req ForgeRequest) (forge.Forge, forge.Repo, error) {
	c := req.Creds
	if c.Password == "" {
		return t.lentForge(req)
	}
	r, err := t.resolver(req.Transport, req.TLS)
	if err != nil {
		return nil, forge.Repo{}, err
	}
	return r.Resolve(req.RepoURL, req.Kind, c.Username, c.Password)
}

// resolver is t's Resolver with the transport tr, or one that trusts as
// tc says.
func (t *TokenForges) resolver(tr http.RoundTripper, tc TLS) (*forge.Resolver, error) {
	r := *t.Resolver
	switch {
	case tr != nil:
		r.Options.Transport = tr
	case len(tc.CABundle) > 0 || tc.InsecureSkipVerify:
		tr, err := t.transport(tc)
		if err != nil {
			return nil, err
		}
		r.Options.Transport = tr
	}
	return &r, nil
}

// transport returns the HTTP transport that trusts as tc says, one per
// setting so that its connections are reused.
func (t *TokenForges) transport(tc TLS) (http.RoundTripper, error) {
	key := fmt.Sprintf("%t\x00%s", tc.InsecureSkipVerify, tc.CABundle)
	t.mu.Lock()
	defer t.mu.Unlock()
	if tr, ok := t.transports[key]; ok {
		return tr, nil
	}
	cfg, err := tc.config()
	if err != nil {
		return nil, err
	}
	base, _ := http.DefaultTransport.(*http.Transport)
	tr := base.Clone()
	tr.TLSClientConfig = cfg
	if t.transports == nil {
		t.transports = map[string]http.RoundTripper{}
	}
	t.transports[key] = tr
	return tr, nil
}

// PullRequestRef names a pull request a pull-request write opened, for
// following it (Writer.PullRequestState, ClosePullRequest): its
// repository, the forge kind and credentials its changes named, and its
// number.
type PullRequestRef struct {
	// RepoURL is the repository as the changes named it (credentials in
	// it are used as they were for the write).
	RepoURL           string
	CredentialsSecret string
	Project           string
	Forge             string
	Number            int
}

// forgeOf returns the forge and repository of ref, with the credentials
// the write used.
func (w *Writer) forgeOf(ctx context.Context, ref PullRequestRef) (forge.Forge, forge.Repo, error) {
	clean, creds := splitURL(ref.RepoURL)
	if w.Credentials != nil {
		c, ok, err := w.Credentials.Credentials(WithProject(WithCredentialsSecret(ctx, ref.CredentialsSecret), ref.Project), clean)
		if err != nil {
			return nil, forge.Repo{}, fmt.Errorf("getting credentials: %w", err)
		}
		if ok {
			creds = c
		}
	}
	return w.forge(&batch{repoURL: clean, pr: &PullRequest{Forge: ref.Forge}}, creds)
}

// PullRequestState returns pull request ref as its forge reports it now.
func (w *Writer) PullRequestState(ctx context.Context, ref PullRequestRef) (*forge.PullRequest, error) {
	f, r, err := w.forgeOf(ctx, ref)
	if err != nil {
		return nil, err
	}
	return f.Get(ctx, r, ref.Number)
}

// ClosePullRequest comments on pull request ref and closes it without
// merging.
func (w *Writer) ClosePullRequest(ctx context.Context, ref PullRequestRef, comment string) error {
	f, r, err := w.forgeOf(ctx, ref)
	if err != nil {
		return err
	}
	return f.Close(ctx, r, ref.Number, comment)
}

// planPullRequest fills p.PullRequest for a pull-request batch whose
// commit message is p.Message: the open pull request (sync looked it up)
// is updated, or one is opened.
func (s *session) planPullRequest(ctx context.Context, p *Plan) {
	pr := s.b.pr
	if pr == nil {
		return
	}
	pp := &PlannedPullRequest{Action: "open", Head: s.b.target, Base: s.b.base,
		Labels: pr.Labels, Reviewers: pr.Reviewers, Assignees: pr.Assignees, Draft: pr.Draft, AutoMerge: pr.AutoMerge}
	limit := forge.DefaultBodyLimit
	if f, r, err := s.w.forge(s.b, s.creds); err == nil {
		pp.Repo, limit = r.String(), forge.BodyLimit(f)
	}
	title, body, edit, err := s.proposalText(p.Updates, limit)
	if err != nil {
		pp.Note = err.Error()
		p.PullRequest = pp
		return
	}
	pp.Title, pp.Body = title, body
	if s.pr != nil {
		pp.Action, pp.Number, pp.URL = "update", s.pr.Number, s.pr.URL
	}
	if s.pr != nil && !edit {
		pp.Note = "the push moves the open pull request's head; its title and body stay: no request"
		p.PullRequest = pp
		return
	}
	reqs, err := s.plannedRequests(ctx, pp)
	pp.Requests = reqs
	if err != nil {
		pp.Note = "the dry run's answers end the forge's steps here: " + redact(err, s.creds.secrets()...).Error()
	}
	p.PullRequest = pp
}

// rateLimitedFor is how long a forge's rate limit in err asks to wait, 0
// for none.
func rateLimitedFor(err error) time.Duration {
	var rl *forge.RateLimitError
	if errors.As(err, &rl) {
		return rl.RetryAfter
	}
	return 0
}

// proposal is what the batch asks of its pull request, with title and
// body.
func (s *session) proposal(title, body string) forge.Proposal {
	p := s.b.pr
	return forge.Proposal{Head: s.b.target, Base: s.b.base, Title: title, Body: body,
		Labels: p.Labels, Reviewers: p.Reviewers, Assignees: p.Assignees, Draft: p.Draft, AutoMerge: p.AutoMerge}
}

// proposalText is the title and body of the batch's pull request once a
// commit made updates (proposalFor), and whether the open pull request
// needs them edited (one is open and says otherwise).
func (s *session) proposalText(updates []Update, limit int) (title, body string, edit bool, err error) {
	if title, body, err = s.proposalFor(updates, limit); err != nil {
		return "", "", false, err
	}
	if s.pr == nil {
		return title, body, false, nil
	}
	title = keepDraftMarker(s.b.pr, s.pr.Title, title)
	return title, body, s.pr.Title != title || s.pr.Body != body, nil
}

// keepDraftMarker keeps the draft marker of a draft pull request's title
// ("WIP: " on Gitea and Forgejo, "Draft: " on GitLab) when its title is
// replaced: the update must not take it out of draft.
func keepDraftMarker(pr *PullRequest, open, title string) string {
	if !pr.Draft {
		return title
	}
	for _, m := range []string{"WIP: ", "Draft: "} {
		if strings.HasPrefix(open, m) && !strings.HasPrefix(title, m) {
			return m + title
		}
	}
	return title
}
