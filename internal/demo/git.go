package demo

import (
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	git "github.com/go-git/go-git/v5"
	gitconfig "github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/crowsnest-dev/crowsnest/examples"
)

// seedRepo creates the bare repository and pushes examples/demo/repo
// as the first commit of main.
func seedRepo(bare, work string, subst *strings.Replacer) (plumbing.Hash, error) {
	if _, err := git.PlainInitWithOptions(bare, &git.PlainInitOptions{
		Bare:        true,
		InitOptions: git.InitOptions{DefaultBranch: plumbing.NewBranchReferenceName("main")},
	}); err != nil {
		return plumbing.ZeroHash, err
	}
	r, err := git.PlainInitWithOptions(work, &git.PlainInitOptions{
		InitOptions: git.InitOptions{DefaultBranch: plumbing.NewBranchReferenceName("main")},
	})
	if err != nil {
		return plumbing.ZeroHash, err
	}
	if err := copyFiles("demo/repo", work, subst); err != nil {
		return plumbing.ZeroHash, err
	}
	wt, err := r.Worktree()
	if err != nil {
		return plumbing.ZeroHash, err
	}
	if err := wt.AddWithOptions(&git.AddOptions{All: true}); err != nil {
		return plumbing.ZeroHash, err
	}
	sig := &object.Signature{Name: "demo", Email: "demo@crowsnest.dev", When: time.Now()}
	h, err := wt.Commit("Deploy web, api and worker", &git.CommitOptions{Author: sig})
	if err != nil {
		return plumbing.ZeroHash, err
	}
	if _, err := r.CreateRemote(&gitconfig.RemoteConfig{Name: "origin", URLs: []string{"file://" + filepath.ToSlash(bare)}}); err != nil {
		return plumbing.ZeroHash, err
	}
	if err := r.Push(&git.PushOptions{RemoteName: "origin", RefSpecs: []gitconfig.RefSpec{"refs/heads/main:refs/heads/main"}}); err != nil {
		return plumbing.ZeroHash, err
	}
	return h, nil
}

// Commits lists the commits on main after seed, oldest first, with
// their diffs.
func repoCommits(bare string, seed plumbing.Hash) ([]Commit, error) {
	r, err := git.PlainOpen(bare)
	if err != nil {
		return nil, err
	}
	ref, err := r.Reference(plumbing.NewBranchReferenceName("main"), true)
	if err != nil {
		return nil, err
	}
	var out []Commit
	for h := ref.Hash(); h != seed; {
		c, err := r.CommitObject(h)
		if err != nil {
			return nil, err
		}
		parent, err := c.Parent(0)
		if err != nil {
			return nil, fmt.Errorf("commit %s: %w", h, err)
		}
		patch, err := parent.Patch(c)
		if err != nil {
			return nil, err
		}
		out = append(out, Commit{SHA: h.String(), Message: c.Message, Diff: patch.String()})
		h = parent.Hash
	}
	slices.Reverse(out)
	return out, nil
}

// copyFiles copies the embedded folder from to the folder to, through subst.
func copyFiles(from, to string, subst *strings.Replacer) error {
	return fs.WalkDir(examples.Demo, from, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel := strings.TrimPrefix(p, from+"/")
		return copyFile(p, filepath.Join(to, filepath.FromSlash(rel)), subst)
	})
}

func copyFile(from, to string, subst *strings.Replacer) error {
	b, err := fs.ReadFile(examples.Demo, path.Clean(from))
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
		return err
	}
	return os.WriteFile(to, []byte(subst.Replace(string(b))), 0o644)
}
