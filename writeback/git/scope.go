package git

import (
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/gobwas/glob"
	"go.yaml.in/yaml/v3"
)

// ErrOutsideScope is a change whose file is not one its Application
// renders from, nor one the operator lets it write. It is an
// ErrInvalidChange: only that change fails, the rest of its batch is
// written. A shared repository an AppProject permits is a place to
// deploy from, not write access to every team's folder in it.
var ErrOutsideScope = fmt.Errorf("%w: write outside what the Application renders from", ErrInvalidChange)

// Scope is what a change may write in its repository: the files its
// Application renders from there, and what the operator allows beyond.
// The zero Scope is the change's Path alone.
type Scope struct {
	// Sources are the Application's source paths in the repository,
	// relative to its root ("" or "." is the root). A source path's
	// kustomization, what it pulls in from the repository (resources,
	// bases and components that are local folders or files, followed to
	// a bound), its values.yaml and its .argocd-source-<app>.yaml are in
	// scope.
	Sources []string
	// Files are more files the Application renders from, relative to the
	// root: its Helm value files, resolved against their source path or
	// their $ref source's root.
	Files []string
	// Allowed are path globs, relative to the root ('*' not crossing '/',
	// '**' crossing it), the operator lets the Application write anyway
	// (tenancy.writePaths).
	Allowed []string
}

// The bounds of following kustomizations: a repository is tenant input.
// Past them the rest is not in scope, and the refusal says so.
const (
	maxKustomizeDepth     = 10      // folders from a source path to a base
	maxKustomizeDirs      = 100     // kustomization folders read per change
	maxKustomizeEntries   = 1000    // resources, bases and components read per change
	maxKustomizationBytes = 1 << 20 // one kustomization file
)

// kustomizationNames are the file names kustomize reads in a folder, in
// its order.
var kustomizationNames = []string{"kustomization.yaml", "kustomization.yml", "Kustomization"}

// checkScope refuses c's write to rel (relative to the checkout at dir,
// as targetFile resolved it) unless c's Application renders from that
// file or the operator allows it.
func checkScope(dir string, c Change, rel string) error {
	s := c.Scope
	if s == nil {
		s = &Scope{Sources: []string{c.Path}}
	}
	root, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return fmt.Errorf("reading the checkout: %w", err)
	}
	target := canon(root, rel)
	for _, p := range s.Allowed {
		g, err := glob.Compile(strings.TrimPrefix(p, "/"), '/')
		if err == nil && target != "" && g.Match(target) {
			return nil
		}
	}
	r := renderedFrom(root, s)
	d, base := path.Dir(target), path.Base(target)
	switch {
	case target == "":
	case r.files[target]:
		return nil
	case r.dirs[d] && slices.Contains(kustomizationNames, base):
		return nil
	case r.sources[d] && (base == "values.yaml" || base == ".argocd-source-"+c.App+".yaml"):
		return nil
	}
	more := ""
	if r.truncated {
		more = fmt.Sprintf(" (followed up to %d folders, %d deep, %d entries, %d bytes a kustomization)",
			maxKustomizeDirs, maxKustomizeDepth, maxKustomizeEntries, maxKustomizationBytes)
	}
	return fmt.Errorf("%w: %s (rule: write-back goes only to the files of its source paths %s and what their kustomizations include%s, "+
		"its Helm value files, and paths tenancy.writePaths allows)", ErrOutsideScope, rel, shownPaths(s.Sources), more)
}

// shownPaths lists source paths for a message: at most three, each cut
// at 100 bytes (they are the Application author's to write).
func shownPaths(ps []string) string {
	out := make([]string, 0, 4)
	for i, p := range ps {
		if i == 3 {
			out = append(out, "...")
			break
		}
		p = "/" + strings.TrimPrefix(path.Clean("/"+p), "/")
		if len(p) > 100 {
			p = strings.ToValidUTF8(p[:100], "") + "..."
		}
		out = append(out, p)
	}
	if len(out) == 0 {
		return "(none in this repository)"
	}
	return strings.Join(out, ", ")
}

// rendered is what an Application renders from in one checkout, as
// paths relative to its root with every link resolved.
type rendered struct {
	sources, dirs, files map[string]bool
	// truncated is true when a bound stopped the walk.
	truncated bool
}

// renderedFrom follows s's source paths' kustomizations through the
// checkout at root (links resolved) within the bounds.
func renderedFrom(root string, s *Scope) *rendered {
	r := &rendered{sources: map[string]bool{}, dirs: map[string]bool{}, files: map[string]bool{}}
	for _, f := range s.Files {
		if p, ok := inRepo(f); ok {
			if c := canon(root, p); c != "" {
				r.files[c] = true
			}
		}
	}
	type folder struct {
		dir   string
		depth int
	}
	var queue []folder
	for _, src := range s.Sources {
		if p, ok := inRepo(src); ok {
			d := canon(root, p)
			r.sources[d] = true
			queue = append(queue, folder{d, 0})
		}
	}
	entries := 0
	for len(queue) > 0 {
		f := queue[0]
		queue = queue[1:]
		if r.dirs[f.dir] || f.dir == "" {
			continue
		}
		if len(r.dirs) == maxKustomizeDirs {
			r.truncated = true
			break
		}
		r.dirs[f.dir] = true
		for _, e := range kustomizationEntries(root, f.dir, &r.truncated) {
			entries++
			if entries > maxKustomizeEntries {
				r.truncated = true
				return r
			}
			p, isDir, ok := localEntry(root, f.dir, e)
			switch {
			case !ok:
			case !isDir:
				r.files[p] = true
			case f.depth == maxKustomizeDepth:
				r.truncated = true
			default:
				queue = append(queue, folder{p, f.depth + 1})
			}
		}
	}
	return r
}

// kustomizationEntries are the resources, bases and components of the
// kustomization in dir (relative to root), none when there is none or
// it is a link, too big, not YAML or has a field of the wrong type.
func kustomizationEntries(root, dir string, truncated *bool) []string {
	for _, name := range kustomizationNames {
		full := filepath.Join(root, filepath.FromSlash(dir), name)
		fi, err := os.Lstat(full)
		if err != nil {
			continue
		}
		if !fi.Mode().IsRegular() {
			return nil
		}
		b, err := readAtMost(full, maxKustomizationBytes)
		if err != nil {
			*truncated = true
			return nil
		}
		var k struct {
			Resources  []string `yaml:"resources"`
			Bases      []string `yaml:"bases"`
			Components []string `yaml:"components"`
		}
		if err := yaml.Unmarshal(b, &k); err != nil {
			return nil // kustomize would not build it either
		}
		return slices.Concat(k.Resources, k.Bases, k.Components)
	}
	return nil
}

// readAtMost reads the file at name, failing past limit bytes.
func readAtMost(name string, limit int64) ([]byte, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err == nil && int64(len(b)) > limit {
		err = fmt.Errorf("%s is over %d bytes", name, limit)
	}
	return b, err
}

// localEntry resolves a kustomization entry e of the folder dir to a
// folder or file of the checkout at root (links resolved); ok is false
// for a URL, a remote Git reference, an absolute path, anything missing
// or anything outside the checkout or in .git.
func localEntry(root, dir, e string) (p string, isDir, ok bool) {
	if e == "" || strings.Contains(e, "://") || strings.HasPrefix(e, "/") {
		return "", false, false
	}
	rel, ok := inRepo(path.Join(dir, e))
	if !ok {
		return "", false, false
	}
	resolved, err := filepath.EvalSymlinks(filepath.Join(root, filepath.FromSlash(rel)))
	if err != nil {
		return "", false, false
	}
	p, ok = inside(root, resolved)
	if !ok || p == ".git" || strings.HasPrefix(p, ".git/") {
		return "", false, false
	}
	fi, err := os.Stat(resolved)
	if err != nil {
		return "", false, false
	}
	return p, fi.IsDir(), true
}

// inRepo cleans p, a path relative to the repository root; ok is false
// when it leaves the root.
func inRepo(p string) (string, bool) {
	p = path.Clean(p)
	if p == ".." || strings.HasPrefix(p, "../") || path.IsAbs(p) {
		return "", false
	}
	return p, true
}

// canon is rel (relative to root, which has no links) with the links of
// its existing part resolved: the file itself, or else its folder. A
// path outside root is "".
func canon(root, rel string) string {
	full := filepath.Join(root, filepath.FromSlash(rel))
	if resolved, err := filepath.EvalSymlinks(full); err == nil {
		p, _ := inside(root, resolved)
		return p
	}
	if resolved, err := filepath.EvalSymlinks(filepath.Dir(full)); err == nil {
		if p, ok := inside(root, resolved); ok {
			return path.Join(p, path.Base(rel))
		}
		return ""
	}
	return path.Clean(rel)
}

// inside is resolved (an absolute path without links) relative to root, as
// a slash path; ok is false when it is not under root.
func inside(root, resolved string) (string, bool) {
	r, err := filepath.Rel(root, resolved)
	if err != nil {
		return "", false
	}
	r = filepath.ToSlash(r)
	if r == ".." || strings.HasPrefix(r, "../") {
		return "", false
	}
	return r, true
}
