package git

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// CommitMetadata is what Argo CD's repo server tells about a commit
// (RevisionMetadata): Author is "Name <email>", Date the author date,
// Message the whole message without surrounding space, Tags the tags
// that point at the commit, sorted.
type CommitMetadata struct {
	Message string
	Author  string
	Date    time.Time
	Tags    []string
}

// ErrRevisionNotFound means the repository has no such commit (after
// fetching its branches and tags).
var ErrRevisionNotFound = errors.New("revision not found in the repository")

// shaRE is a full or abbreviated commit SHA, as Argo CD's repo server
// accepts for revision metadata.
var shaRE = regexp.MustCompile(`^[0-9a-f]{7,40}$`)

// CommitMetadata reads revision (a commit SHA) of repoURL from the clone
// cache, fetching branches and tags when the clone lacks it. Credentials
// come from the URL and the Writer's CredentialsSource, as for a write;
// each network operation is bounded by Timeout. It never pushes.
func (w *Writer) CommitMetadata(ctx context.Context, repoURL, revision string) (CommitMetadata, error) {
	var out CommitMetadata
	revision = strings.ToLower(strings.TrimSpace(revision))
	if !shaRE.MatchString(revision) {
		return out, fmt.Errorf("revision %q is not a commit SHA", revision)
	}
	err := w.withClone(ctx, repoURL, func(s *session) error {
		c, err := s.commitFor(ctx, revision)
		if err != nil {
			return err
		}
		out = CommitMetadata{
			Author:  c.Author.Name + " <" + c.Author.Email + ">",
			Date:    time.Unix(c.Author.When.Unix(), 0).UTC(),
			Message: strings.TrimSpace(c.Message),
		}
		out.Tags, err = s.tagsAt(c.Hash)
		return err
	})
	return out, err
}

// Dir is one directory of a repository at one commit.
type Dir struct {
	// SHA is the commit the revision resolved to.
	SHA string
	// Found reports whether the directory exists at that commit.
	Found bool
	// Names are the names of the files directly in the directory, sorted.
	Names []string
	// Files holds the contents of the files ReadDir was asked to read:
	// those in the directory by name, the extra ones by their path from
	// the repository root with a leading "/". A missing extra file is
	// not there.
	Files map[string][]byte
}

// ReadLimits bound what one ReadDir reads: the repository and the paths
// come from an Application, whose author chooses the files' sizes.
type ReadLimits struct {
	// File bounds each file.
	File int64
	// Total bounds the files read together; 0 leaves only File.
	Total int64
}

// budget counts the bytes ReadDir reads against its limits.
type budget struct {
	ReadLimits
	used int64
}

// take accounts for a file of size bytes at p, or says which limit it
// passes; nothing is read before it agrees.
func (b *budget) take(p string, size int64) error {
	if size > b.File {
		return fmt.Errorf("%s: %d bytes, over the %d-byte limit", p, size, b.File)
	}
	if b.Total > 0 && b.used+size > b.Total {
		return fmt.Errorf("%s: the files read come to over the %d-byte limit together", p, b.Total)
	}
	b.used += size
	return nil
}

// ReadDir reads dir (a path in the repository, "" or "." the root) at
// revision: a branch, a tag, a commit SHA, or "" / "HEAD" for the default
// branch, after fetching branches and tags. It lists the files directly
// in dir and reads those read selects, and the extra files (paths from
// the repository root; they cannot leave it); a file over limits.File,
// or one that takes the files read past limits.Total, is an error.
func (w *Writer) ReadDir(ctx context.Context, repoURL, revision, dir string, read func(name string) bool, limits ReadLimits, extra ...string) (Dir, error) {
	var out Dir
	b := &budget{ReadLimits: limits}
	err := w.withClone(ctx, repoURL, func(s *session) error {
		c, err := s.resolve(ctx, revision)
		if err != nil {
			return err
		}
		out.SHA = c.Hash.String()
		root, err := c.Tree()
		if err != nil {
			return err
		}
		out.Files = map[string][]byte{}
		for _, p := range extra {
			p = path.Clean("/" + p)
			f, err := root.File(strings.TrimPrefix(p, "/"))
			if err != nil {
				continue
			}
			if err := b.take(p, f.Size); err != nil {
				return err
			}
			text, err := f.Contents()
			if err != nil {
				return err
			}
			out.Files[p] = []byte(text)
		}
		tree := root
		if d := strings.Trim(path.Clean("/"+dir), "/"); d != "" {
			if tree, err = tree.Tree(d); err != nil {
				if errors.Is(err, object.ErrDirectoryNotFound) {
					return nil
				}
				return err
			}
		}
		out.Found = true
		for _, e := range tree.Entries {
			if !e.Mode.IsFile() {
				continue
			}
			out.Names = append(out.Names, e.Name)
			if read == nil || !read(e.Name) {
				continue
			}
			text, err := readEntry(tree, e, path.Join(dir, e.Name), b)
			if err != nil {
				return err
			}
			out.Files[e.Name] = text
		}
		sort.Strings(out.Names)
		return nil
	})
	return out, err
}

func readEntry(tree *object.Tree, e object.TreeEntry, p string, b *budget) ([]byte, error) {
	f, err := tree.TreeEntryFile(&e)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", p, err)
	}
	if err := b.take(p, f.Size); err != nil {
		return nil, err
	}
	r, err := f.Reader()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", p, err)
	}
	defer func() { _ = r.Close() }()
	text, err := io.ReadAll(io.LimitReader(r, f.Size))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", p, err)
	}
	return text, nil
}

// withClone runs f on repoURL's clone, locked, opened (cloned when
// missing), with the credentials of the AppProject WithProject put in
// ctx. Errors are redacted of the credentials used.
func (w *Writer) withClone(ctx context.Context, repoURL string, f func(*session) error) error {
	if w.CacheDir == "" {
		return errors.New("git: CacheDir is not set")
	}
	clean, urlCreds := splitURL(repoURL)
	s, release, err := w.openSession(ctx, &batch{repoURL: clean, creds: urlCreds, project: Project(ctx)})
	if err != nil {
		return redact(err, urlCreds.Password)
	}
	defer release()
	if err := s.open(ctx); err != nil {
		return redact(err, s.creds.secrets()...)
	}
	return redact(f(s), s.creds.secrets()...)
}

// commitFor fetches branches and tags (so Tags are current: metadata is
// asked for once per revision by the caller's cache) and finds revision.
func (s *session) commitFor(ctx context.Context, revision string) (*object.Commit, error) {
	if err := s.fetchTags(ctx); err != nil {
		return nil, err
	}
	c, err := s.lookupCommit(revision)
	if err != nil {
		return nil, fmt.Errorf("%w: %s", ErrRevisionNotFound, revision)
	}
	return c, nil
}

// resolve finds a commit by SHA, branch or tag, fetching first.
func (s *session) resolve(ctx context.Context, revision string) (*object.Commit, error) {
	if err := s.fetchTags(ctx); err != nil {
		return nil, err
	}
	revision = strings.TrimSpace(revision)
	if revision == "" || revision == "HEAD" {
		name, err := s.defaultBranch(ctx)
		if err != nil {
			return nil, err
		}
		revision = name
	}
	for _, ref := range []plumbing.ReferenceName{
		plumbing.NewRemoteReferenceName(remoteName, revision), plumbing.NewTagReferenceName(revision),
	} {
		r, err := s.repo.Reference(ref, true)
		if err != nil {
			continue
		}
		return s.peel(r.Hash())
	}
	if shaRE.MatchString(strings.ToLower(revision)) {
		if c, err := s.lookupCommit(strings.ToLower(revision)); err == nil {
			return c, nil
		}
	}
	return nil, fmt.Errorf("%w: %s", ErrRevisionNotFound, revision)
}

func (s *session) lookupCommit(revision string) (*object.Commit, error) {
	if len(revision) == 40 {
		return s.repo.CommitObject(plumbing.NewHash(revision))
	}
	h, err := s.repo.ResolveRevision(plumbing.Revision(revision))
	if err != nil {
		return nil, err
	}
	return s.repo.CommitObject(*h)
}

// peel returns the commit h names, through an annotated tag.
func (s *session) peel(h plumbing.Hash) (*object.Commit, error) {
	for range 8 {
		t, err := s.repo.TagObject(h)
		if err != nil {
			break
		}
		h = t.Target
	}
	return s.repo.CommitObject(h)
}

// fetchTags fetches branches and tags (forced, pruned), as Argo CD's
// repo server fetches before reading revision metadata.
func (s *session) fetchTags(ctx context.Context) error {
	return s.fetchRefs(ctx, branchesRefSpec, "+refs/tags/*:refs/tags/*")
}

// tagsAt lists the tags pointing at commit h (lightweight or annotated),
// as `git tag --points-at` does, sorted.
func (s *session) tagsAt(h plumbing.Hash) ([]string, error) {
	refs, err := s.repo.Tags()
	if err != nil {
		return nil, err
	}
	defer refs.Close()
	var tags []string
	err = refs.ForEach(func(r *plumbing.Reference) error {
		target := r.Hash()
		if t, err := s.repo.TagObject(target); err == nil {
			target = t.Target
		}
		if target == h {
			tags = append(tags, r.Name().Short())
		}
		return nil
	})
	sort.Strings(tags)
	return tags, err
}
