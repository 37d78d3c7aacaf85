package git

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
)

// ChangeError is a change of a batch that could not be applied (a bad
// path, a file that is not YAML, a missing kustomization). The rest of its
// batch is still committed: one broken Application does not hold back the
// others in a monorepo.
type ChangeError struct {
	App string
	// Key is the change's Key (Change.Key, or App when it had none).
	Key string
	Err error
}

func (e *ChangeError) Error() string { return e.App + ": " + e.Err.Error() }
func (e *ChangeError) Unwrap() error { return e.Err }

// edit applies every change of a batch in the work tree at dir and
// returns the values changed, the files that changed (sorted) and the
// changes that failed. A change is applied whole or not at all. err is a
// failure to write the work tree.
func (w *Writer) edit(dir string, changes []Change) (updates []Update, files []string, failed []*ChangeError, err error) {
	updates, eds, failed := edits(dir, changes)
	files = make([]string, 0, len(eds))
	for _, e := range eds {
		full := filepath.Join(dir, filepath.FromSlash(e.rel))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			return nil, nil, nil, err
		}
		if err := os.WriteFile(full, e.after, 0o644); err != nil {
			return nil, nil, nil, fmt.Errorf("writing %s: %w", e.rel, err)
		}
		files = append(files, e.rel)
	}
	return updates, files, failed, nil
}

// fileEdit is one file of the work tree as a batch's changes leave it.
type fileEdit struct {
	rel string
	// before is the file as checked out; existed is false when the
	// batch creates it.
	before  []byte
	existed bool
	after   []byte
}

// edits computes every change of a batch against the work tree at dir
// without writing it: each change sees the files as the changes before it
// left them, as when they are written one after the other. It returns the
// values changed, the files written (sorted by path) and the changes that
// failed. Apply writes what it returns (edit); Plan diffs it.
func edits(dir string, changes []Change) (updates []Update, files []*fileEdit, failed []*ChangeError) {
	byRel := map[string]*fileEdit{}
	for i := range changes {
		c := &changes[i]
		rel, ups, out, cerr := editChange(dir, *c, byRel)
		if cerr != nil {
			if !errors.Is(cerr, ErrInvalidChange) {
				cerr = fmt.Errorf("%w: %w", ErrInvalidChange, cerr)
			}
			failed = append(failed, &ChangeError{App: c.App, Key: c.key(), Err: cerr})
			continue
		}
		if out == nil {
			continue
		}
		e := byRel[rel]
		if e == nil {
			e = &fileEdit{rel: rel}
			e.before, e.existed = readExisting(dir, rel)
			byRel[rel] = e
			files = append(files, e)
		}
		e.after = out
		updates = append(updates, ups...)
	}
	slices.SortFunc(files, func(a, b *fileEdit) int { return strings.Compare(a.rel, b.rel) })
	return updates, files, failed
}

// readExisting reads rel in the work tree at dir; ok is false when it is
// not there.
func readExisting(dir, rel string) (content []byte, ok bool) {
	b, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(rel)))
	if err != nil {
		return nil, false
	}
	return b, true
}

// editChange computes one change's new file content, reading the files
// earlier changes of the batch edited from edited; out is nil when the
// file is already as asked.
func editChange(dir string, c Change, edited map[string]*fileEdit) (rel string, updates []Update, out []byte, err error) {
	rel, create, err := targetFile(dir, c)
	if err != nil {
		return "", nil, nil, err
	}
	if err := checkScope(dir, c, rel); err != nil {
		return "", nil, nil, err
	}
	var content []byte
	if e := edited[rel]; e != nil {
		content = e.after
	} else {
		content, err = os.ReadFile(filepath.Join(dir, filepath.FromSlash(rel)))
	}
	switch {
	case errors.Is(err, os.ErrNotExist) && create:
		content = nil
	case err != nil:
		return "", nil, nil, fmt.Errorf("reading %s: %w", rel, err)
	}
	out = content
	for i := range c.Images {
		im := &c.Images[i]
		var from string
		var ch bool
		out, from, ch, err = editFile(out, c.Target.Kind, c.SourceType, *im)
		if err != nil {
			return "", nil, nil, fmt.Errorf("%s: %w", rel, err)
		}
		if ch {
			updates = append(updates, Update{App: c.App, Key: c.key(), Image: im.Name, Alias: im.Alias, File: rel, From: from, To: im.shown(),
				Revision: im.Revision, Source: im.Source})
		}
	}
	if bytes.Equal(out, content) {
		return rel, nil, nil, nil
	}
	return rel, updates, out, nil
}

// targetFile resolves the file a change edits, relative to the repository
// root, refusing paths that leave it (by "..", or by a symbolic link).
// create says a missing file is created.
func targetFile(dir string, c Change) (rel string, create bool, err error) {
	join := func(p string) string {
		if strings.HasPrefix(p, "/") {
			return path.Clean(strings.TrimPrefix(p, "/"))
		}
		return path.Join(c.Path, p)
	}
	switch c.Target.Kind {
	case TargetArgoCDSource:
		if c.App == "" || strings.ContainsAny(c.App, `/\`) {
			return "", false, fmt.Errorf("%w: application name %q", ErrInvalidChange, c.App)
		}
		rel, create = path.Join(c.Path, ".argocd-source-"+c.App+".yaml"), true
	case TargetKustomization:
		rel = join(c.Target.Path)
		if ext := path.Ext(rel); ext != ".yaml" && ext != ".yml" {
			rel = path.Join(rel, "kustomization.yaml")
			for _, alt := range []string{"kustomization.yaml", "kustomization.yml", "Kustomization"} {
				p := path.Join(path.Dir(rel), alt)
				if _, err := os.Stat(filepath.Join(dir, filepath.FromSlash(p))); err == nil {
					rel = p
					break
				}
			}
		}
	case TargetHelmValues:
		rel = join(cmp.Or(c.Target.Path, "values.yaml"))
	default:
		return "", false, fmt.Errorf("%w: unknown target kind %d", ErrInvalidChange, c.Target.Kind)
	}
	rel = path.Clean(rel)
	if rel == "." || rel == ".." || strings.HasPrefix(rel, "../") || path.IsAbs(rel) || strings.HasPrefix(rel, ".git/") || rel == ".git" {
		return "", false, fmt.Errorf("%w: path %q is outside the repository", ErrInvalidChange, rel)
	}
	// No symbolic link on the way may lead out of the checkout or into
	// .git. The deepest folder of the path that exists decides: the
	// missing ones are created inside it.
	existing := path.Dir(rel)
	for existing != "." {
		if _, err := os.Lstat(filepath.Join(dir, filepath.FromSlash(existing))); err == nil {
			break
		}
		existing = path.Dir(existing)
	}
	resolved, err := filepath.EvalSymlinks(filepath.Join(dir, filepath.FromSlash(existing)))
	root, rerr := filepath.EvalSymlinks(dir)
	sep := string(filepath.Separator)
	if err != nil || rerr != nil || (resolved != root && !strings.HasPrefix(resolved, root+sep)) ||
		resolved == filepath.Join(root, ".git") || strings.HasPrefix(resolved, filepath.Join(root, ".git")+sep) {
		return "", false, fmt.Errorf("%w: path %q leaves the repository through a link", ErrInvalidChange, rel)
	}
	if fi, err := os.Lstat(filepath.Join(dir, filepath.FromSlash(rel))); err == nil && fi.Mode()&os.ModeSymlink != 0 {
		return "", false, fmt.Errorf("%w: %q is a symbolic link", ErrInvalidChange, rel)
	}
	return rel, create, nil
}
