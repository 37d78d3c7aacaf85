package git

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	fdiff "github.com/go-git/go-git/v5/plumbing/format/diff"
	"github.com/go-git/go-git/v5/utils/diff"
	"github.com/sergi/go-diff/diffmatchpatch"

	"github.com/crowsnest-dev/crowsnest/internal/backoff"
)

// Plan is what Apply would write for one batch (one repository and target
// branch), computed by the code Apply runs, short of committing: the
// cache's clone is fetched, the base commit is checked out detached (no
// branch of the clone moves), the changes are applied in memory and each
// file is diffed. Nothing is committed or pushed.
type Plan struct {
	// RepoURL is the repository's RepoID: without credentials.
	RepoURL string
	// Keys are the Keys of the batch's changes (sorted, once each).
	Keys []string
	// BaseBranch is the branch the commit would be made on top of, Branch
	// the one it would be pushed to (a template rendered, HEAD resolved to
	// the remote's default branch). They differ for "base:target".
	BaseBranch string
	Branch     string
	// BaseCommit is the remote head the diffs are against.
	BaseCommit string
	// NewBranch says Branch does not exist on the remote yet: the push
	// would create it from BaseBranch.
	NewBranch bool
	// Message is the commit message a write of this batch alone would
	// have; empty when nothing would be committed.
	Message string
	Updates []Update
	Files   []FileDiff
	// Failed lists the changes that could not be applied.
	Failed []*ChangeError
	// PullRequest is what a pull-request batch would ask of the forge
	// (nil for a push, or when nothing would be committed and none is
	// open).
	PullRequest *PlannedPullRequest
	Err         error
}

// PlannedPullRequest is the pull request a write would open, or the open
// one it would bring up to date.
type PlannedPullRequest struct {
	// Action is "open" or "update"; Number and URL are the open pull
	// request's (update).
	Action      string
	Number      int
	URL         string
	Head, Base  string
	Title, Body string
	// Repo is the forge's repository (its API and path).
	Repo string
	// Labels, Reviewers, Assignees, Draft and AutoMerge are asked when
	// the pull request is opened.
	Labels, Reviewers, Assignees []string
	Draft, AutoMerge             bool
	// Requests are what opening or updating it would send the forge, in
	// order, made by the forge's own client and answered by the dry run
	// (a request that depends on a real answer may be missing: Note
	// says so). Each call Find made to plan is not among them.
	Requests []PlannedRequest
	Note     string
}

// FileDiff is one file a write would change.
type FileDiff struct {
	// Path is relative to the repository root.
	Path string
	// New is true when the write creates the file.
	New bool
	// Diff is a unified diff in Git's format (git apply takes it).
	Diff string
}

// Plan returns, for each batch Apply would make of changes, what it would
// write, without writing: sorted as Apply's results. The error joins the
// batches' errors and the changes that could not be applied. As in
// Apply, a change whose branch cannot be read or rendered is a failed
// Plan of its own.
func (w *Writer) Plan(ctx context.Context, changes []Change) ([]Plan, error) {
	batches, err := w.group(changes)
	if err != nil {
		return nil, err
	}
	plans := make([]Plan, 0, len(batches))
	var errs []error
	for _, b := range batches {
		p := w.planBatch(ctx, b)
		if p.Err != nil {
			errs = append(errs, fmt.Errorf("%s %s: %w", p.RepoURL, p.Branch, p.Err))
		} else {
			for _, f := range p.Failed {
				errs = append(errs, fmt.Errorf("%s %s: %w", p.RepoURL, p.Branch, f))
			}
		}
		plans = append(plans, p)
	}
	return plans, errors.Join(errs...)
}

func (w *Writer) planBatch(ctx context.Context, b *batch) Plan {
	p := Plan{RepoURL: b.repoURL, Keys: b.keys(), BaseBranch: b.base, Branch: b.target}
	if b.invalid != nil {
		p.Failed, p.Err = []*ChangeError{b.invalid}, b.invalid
		return p
	}
	s, release, err := w.openSession(ctx, b)
	if err != nil {
		p.Err = err
		return p
	}
	defer release()
	maxAttempts := cmp.Or(w.MaxAttempts, DefaultMaxAttempts)
	for attempt := 1; ; attempt++ {
		err := s.plan(ctx, &p)
		if err == nil {
			return p
		}
		err = redact(remoteError(err), s.creds.secrets()...)
		var term errTerminal
		if errors.As(err, &term) || ctx.Err() != nil || attempt >= maxAttempts || backoff.Sleep(ctx, w.backoff(attempt)) != nil {
			p.Err = err
			return p
		}
	}
}

// plan is attempt without the commit and push.
func (s *session) plan(ctx context.Context, p *Plan) error {
	base, err := s.sync(ctx)
	p.BaseBranch, p.Branch = s.b.base, s.b.target
	if err != nil {
		return err
	}
	p.BaseCommit = base.String()
	_, err = s.repo.Reference(plumbing.NewRemoteReferenceName(remoteName, s.b.target), true)
	p.NewBranch = err != nil
	if _, err := s.checkout(base, true); err != nil {
		s.corrupt = true
		return err
	}
	updates, eds, failed := edits(s.dir, s.b.changes)
	p.Updates, p.Failed, p.Files, p.Message = updates, failed, nil, ""
	for _, e := range eds {
		d, err := e.diff(s.dir)
		if err != nil {
			return terminal(err)
		}
		p.Files = append(p.Files, d)
	}
	if len(eds) > 0 {
		if p.Message, err = s.message(updates); err != nil {
			return terminal(err)
		}
		s.planPullRequest(ctx, p)
	}
	return nil
}

// diff is e as a unified diff in Git's format.
func (e *fileEdit) diff(dir string) (FileDiff, error) {
	mode := filemode.Regular
	var from fdiff.File
	if e.existed {
		// Writing keeps an existing file's mode.
		if fi, err := os.Lstat(filepath.Join(dir, filepath.FromSlash(e.rel))); err == nil {
			if m, err := filemode.NewFromOSFileMode(fi.Mode()); err == nil {
				mode = m
			}
		}
		from = diffFile{path: e.rel, mode: mode, hash: plumbing.ComputeHash(plumbing.BlobObject, e.before)}
	}
	to := diffFile{path: e.rel, mode: mode, hash: plumbing.ComputeHash(plumbing.BlobObject, e.after)}
	var chunks []fdiff.Chunk
	for _, d := range diff.Do(string(e.before), string(e.after)) {
		op := fdiff.Equal
		switch d.Type {
		case diffmatchpatch.DiffInsert:
			op = fdiff.Add
		case diffmatchpatch.DiffDelete:
			op = fdiff.Delete
		case diffmatchpatch.DiffEqual:
		}
		chunks = append(chunks, diffChunk{content: d.Text, op: op})
	}
	var b strings.Builder
	patch := diffPatch{file: diffFilePatch{from: from, to: to, chunks: chunks}}
	if err := fdiff.NewUnifiedEncoder(&b, fdiff.DefaultContextLines).Encode(patch); err != nil {
		return FileDiff{}, fmt.Errorf("diffing %s: %w", e.rel, err)
	}
	return FileDiff{Path: e.rel, New: !e.existed, Diff: b.String()}, nil
}

// The go-git diff encoder's view of one file's change.
type (
	diffPatch     struct{ file diffFilePatch }
	diffFilePatch struct {
		from, to fdiff.File
		chunks   []fdiff.Chunk
	}
	diffFile struct {
		path string
		mode filemode.FileMode
		hash plumbing.Hash
	}
	diffChunk struct {
		content string
		op      fdiff.Operation
	}
)

func (p diffPatch) FilePatches() []fdiff.FilePatch { return []fdiff.FilePatch{p.file} }
func (diffPatch) Message() string                  { return "" }

func (f diffFilePatch) IsBinary() bool               { return false }
func (f diffFilePatch) Files() (from, to fdiff.File) { return f.from, f.to }
func (f diffFilePatch) Chunks() []fdiff.Chunk        { return f.chunks }
func (f diffFile) Hash() plumbing.Hash               { return f.hash }
func (f diffFile) Mode() filemode.FileMode           { return f.mode }
func (f diffFile) Path() string                      { return f.path }
func (c diffChunk) Content() string                  { return c.content }
func (c diffChunk) Type() fdiff.Operation            { return c.op }

var (
	_ fdiff.Patch     = diffPatch{}
	_ fdiff.FilePatch = diffFilePatch{}
	_ fdiff.File      = diffFile{}
	_ fdiff.Chunk     = diffChunk{}
)
