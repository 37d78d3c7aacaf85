package forge

import (
	"cmp"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
)

// Committer is a Forge that makes commits through its API instead of a
// Git push (git.commitMethod api): GitHub signs such commits itself, so
// branches that require signed commits take them.
type Committer interface {
	// Commit makes c and moves c.Branch to it as c.Ref says. sha is the
	// new commit's, set once the commit exists even when moving the
	// branch then failed (whether the branch moved is then unknown when
	// err is not an answer). A branch that moved since c.Parent (or a
	// branch created meanwhile, or a lease that no longer holds) is
	// ErrBranchMoved.
	Commit(ctx context.Context, r Repo, c Commit) (sha string, err error)
}

var _ Committer = (*GitHub)(nil)

// ErrBranchMoved is a commit made through the API whose branch moved
// since the commit's parent was read: the push equivalent of a
// non-fast-forward rejection, retried on the new head.
var ErrBranchMoved = errors.New("the branch moved since it was fetched")

// RefUpdate is how an API commit moves its branch.
type RefUpdate int

// The ways a branch moves (Commit.Ref).
const (
	// RefFastForward moves the branch only if the commit descends from
	// where it is (a plain push).
	RefFastForward RefUpdate = iota
	// RefCreate creates the branch, refused when it exists.
	RefCreate
	// RefForce replaces the branch if it is still at Commit.Lease (a
	// pull request's head rebuilt from the base: a force push with a
	// lease).
	RefForce
)

// Commit is a commit made through a forge's API: Files changed on top of
// Parent, whose tree is BaseTree.
type Commit struct {
	Branch   string
	Parent   string
	BaseTree string
	Message  string
	Files    []CommitFile
	Ref      RefUpdate
	// Lease is where the branch must still be for RefForce.
	Lease string
}

// CommitFile is one file of a Commit: its new content (Mode "100644" or
// "100755"; "" is 100644), or its deletion.
type CommitFile struct {
	Path    string
	Content []byte
	Mode    string
	Delete  bool
}

// Commit implements Committer with the REST Git database API: a blob per
// file, a tree on BaseTree, a commit with Parent, then the branch's ref
// (created, fast-forwarded, or forced after a lease check). No author or
// committer is sent: GitHub makes the authenticated user (a GitHub App's
// bot) both and signs the commit, which shows as Verified.
//
// argocd-image-updater uses GraphQL's createCommitOnBranch with
// expectedHeadOid instead; REST is used here because it keeps file modes
// (an executable stays one), takes binary content and large batches as
// blobs, counts against the REST rate limit the pull-request calls use,
// is what go-github (the conformance reference) speaks, and creates and
// force-moves branches in the same API for pull-request mode. Its
// fast-forward-only ref update refuses a branch that moved, as
// expectedHeadOid and a push do.
func (g *GitHub) Commit(ctx context.Context, r Repo, c Commit) (string, error) {
	if c.Ref == RefForce {
		// REST's forced update has no lease: the branch is read and
		// compared first. The window between the two is that of one
		// request; the lease the push has is atomic.
		var ref refJSON
		err := g.c.call(ctx, r, http.MethodGet, reposPath(r)+"/git/ref/"+refPath(c.Branch), nil, &ref)
		if err != nil {
			return "", refErr(err)
		}
		if ref.Object.SHA != c.Lease {
			return "", fmt.Errorf("%w: %s is at %s, not %s", ErrBranchMoved, c.Branch, ref.Object.SHA, c.Lease)
		}
	}
	entries := make([]treeEntryJSON, 0, len(c.Files))
	for _, f := range c.Files {
		if f.Delete {
			entries = append(entries, treeEntryJSON{Path: f.Path, Mode: "100644", Type: "blob"})
			continue
		}
		in := struct {
			Content  string `json:"content"`
			Encoding string `json:"encoding"`
		}{base64.StdEncoding.EncodeToString(f.Content), "base64"}
		var blob shaJSON
		if err := g.c.call(ctx, r, http.MethodPost, reposPath(r)+"/git/blobs", in, &blob); err != nil {
			return "", err
		}
		sha := blob.SHA
		entries = append(entries, treeEntryJSON{Path: f.Path, Mode: cmp.Or(f.Mode, "100644"), Type: "blob", SHA: &sha})
	}
	treeIn := struct {
		BaseTree string          `json:"base_tree,omitempty"`
		Tree     []treeEntryJSON `json:"tree"`
	}{c.BaseTree, entries}
	var tree shaJSON
	if err := g.c.call(ctx, r, http.MethodPost, reposPath(r)+"/git/trees", treeIn, &tree); err != nil {
		return "", err
	}
	commitIn := struct {
		Message string   `json:"message"`
		Tree    string   `json:"tree"`
		Parents []string `json:"parents"`
	}{c.Message, tree.SHA, []string{c.Parent}}
	var commit shaJSON
	if err := g.c.call(ctx, r, http.MethodPost, reposPath(r)+"/git/commits", commitIn, &commit); err != nil {
		return "", err
	}
	var err error
	switch c.Ref {
	case RefCreate:
		in := struct {
			Ref string `json:"ref"`
			SHA string `json:"sha"`
		}{"refs/heads/" + c.Branch, commit.SHA}
		err = g.c.call(ctx, r, http.MethodPost, reposPath(r)+"/git/refs", in, nil)
	default:
		in := struct {
			SHA   string `json:"sha"`
			Force bool   `json:"force"`
		}{commit.SHA, c.Ref == RefForce}
		err = g.c.call(ctx, r, http.MethodPatch, reposPath(r)+"/git/refs/"+refPath(c.Branch), in, nil)
	}
	return commit.SHA, refErr(err)
}

// refErr marks GitHub's 422 to a ref's creation or update ("Update is
// not a fast forward", "Reference already exists", "Reference does not
// exist") and a 404 to a ref's read as ErrBranchMoved: the branch is not
// where it was fetched, and a fetch says where it is now.
func refErr(err error) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	if strings.Contains(msg, ": 422 ") || strings.Contains(msg, ": 404 ") {
		return fmt.Errorf("%w: %w", ErrBranchMoved, err)
	}
	return err
}

// refPath is refs/heads/branch below git/refs/ as go-github escapes it:
// each segment on its own, the slashes kept.
func refPath(branch string) string {
	segs := strings.Split("heads/"+branch, "/")
	for i, s := range segs {
		segs[i] = url.PathEscape(s)
	}
	return strings.Join(segs, "/")
}

// treeEntryJSON is an entry of a created tree; a nil SHA deletes Path
// (sent as "sha": null).
type treeEntryJSON struct {
	Path string  `json:"path"`
	Mode string  `json:"mode"`
	Type string  `json:"type"`
	SHA  *string `json:"sha"`
}

type shaJSON struct {
	SHA string `json:"sha"`
}

type refJSON struct {
	Object shaJSON `json:"object"`
}
