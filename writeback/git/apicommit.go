package git

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"

	"github.com/crowsnest-dev/crowsnest/writeback/forge"
)

// Commit methods (Writer.CommitMethod, the config's git.commitMethod).
const (
	// CommitMethodGit commits with go-git and pushes (the default).
	CommitMethodGit = "git"
	// CommitMethodAPI creates the commit through the GitHub API with the
	// credentials that would have pushed: with a GitHub App's
	// installation token, GitHub signs it and shows it Verified.
	CommitMethodAPI = "api"
)

// ErrCommitMethod is a repository git.commitMethod api cannot commit to:
// not on GitHub, or without a token to call its API with.
var ErrCommitMethod = errors.New("git.commitMethod api commits through the GitHub API only")

// committer returns the GitHub API of b's repository, with the
// credentials that push to it.
func (s *session) committer() (forge.Committer, forge.Repo, error) {
	if s.w.SignKey != nil {
		return nil, forge.Repo{}, terminal(fmt.Errorf("%w: GitHub signs the commits it makes; leave git.signingKey out", ErrCommitMethod))
	}
	if s.w.Forges == nil {
		return nil, forge.Repo{}, terminal(fmt.Errorf("%w: no forge is configured for %s", ErrCommitMethod, s.b.repoURL))
	}
	kind := ""
	if s.b.pr != nil {
		kind = s.b.pr.Forge
	}
	f, r, err := s.w.Forges.Forge(ForgeRequest{RepoURL: s.b.repoURL, Kind: kind, Creds: s.creds, TLS: s.w.tlsFor(s.b.repoURL)})
	if err != nil {
		return nil, forge.Repo{}, terminal(fmt.Errorf("%w: %s: %w", ErrCommitMethod, s.b.repoURL, err))
	}
	c, ok := f.(forge.Committer)
	if !ok {
		return nil, forge.Repo{}, terminal(fmt.Errorf("%w: %s is not on GitHub (github.com, or a host git.forges names kind github); set git.commitMethod git", ErrCommitMethod, s.b.repoURL))
	}
	return c, r, nil
}

// commitThroughAPI makes the commit of files (written in the work tree on
// top of base) through the GitHub API and moves the target branch to it
// as a push would: fast-forward only, created when missing, or replaced
// only if still where it was fetched when a pull request's head is
// rebuilt. A branch that moved is a rejection, retried on the new head.
func (s *session) commitThroughAPI(ctx context.Context, base plumbing.Hash, updates []Update, files []string, failed []*ChangeError) (string, error) {
	c, r, err := s.committer()
	if err != nil {
		return "", err
	}
	msg, err := s.message(updates)
	if err != nil {
		return "", terminal(err)
	}
	parent, err := s.repo.CommitObject(base)
	if err != nil {
		s.corrupt = true
		return "", err
	}
	tree, err := parent.Tree()
	if err != nil {
		s.corrupt = true
		return "", err
	}
	commit := forge.Commit{Branch: s.b.target, Parent: base.String(), BaseTree: parent.TreeHash.String(), Message: msg}
	for _, f := range files {
		cf := forge.CommitFile{Path: f}
		if e, err := tree.FindEntry(f); err == nil && e.Mode == filemode.Executable {
			cf.Mode = "100755"
		}
		cf.Content, err = os.ReadFile(filepath.Join(s.dir, filepath.FromSlash(f)))
		switch {
		case errors.Is(err, os.ErrNotExist):
			cf.Delete = true
		case err != nil:
			return "", err
		}
		commit.Files = append(commit.Files, cf)
	}
	old, err := s.repo.Reference(plumbing.NewRemoteReferenceName(remoteName, s.b.target), true)
	switch {
	case err != nil:
		commit.Ref = forge.RefCreate
	case s.rebuild:
		commit.Ref, commit.Lease = forge.RefForce, old.Hash().String()
	}
	if err := s.checkProposal(updates); err != nil {
		return "", err
	}
	ctx, stop := withGrace(ctx, s.w.pushGrace())
	defer stop()
	start := time.Now()
	sha, err := c.Commit(ctx, r, commit)
	s.w.Metrics.op(opPush, start, err)
	s.lastMsg, s.lastUpdates = msg, updates
	if err != nil {
		err = fmt.Errorf("committing through the GitHub API: %w", err)
		switch {
		case errors.Is(err, forge.ErrBranchMoved):
			return "", err
		case sha != "" && !forge.IsPermanent(err):
			// The commit exists; whether the branch moved to it is
			// unknown until the next fetch.
			s.unacked = append(s.unacked, unackedPush{sha: plumbing.NewHash(sha), updates: updates, files: files, failed: failed})
		}
		if forge.IsPermanent(err) {
			return "", terminal(err)
		}
		return "", err
	}
	// The next batch starts from a fetch; this one's own retries and
	// the pull request's step see the commit now.
	spec := config.RefSpec("+" + plumbing.NewBranchReferenceName(s.b.target) + ":" + plumbing.NewRemoteReferenceName(remoteName, s.b.target))
	if err := s.fetchRefs(ctx, spec); err != nil {
		s.w.log().Debug("git write-back: fetching the commit made through the API", "repo", s.b.repoURL, "err", redact(err, s.creds.secrets()...))
	}
	return sha, nil
}
