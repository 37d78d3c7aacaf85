package watcher

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/fsnotify/fsnotify"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	"github.com/crowsnest-dev/crowsnest/internal/fsdebounce"
)

// Defaults of the file source.
const (
	// DefaultFileNamespace is given to objects without a namespace: it is
	// where Argo CD keeps Applications unless told otherwise.
	DefaultFileNamespace = "argocd"
	// fileRescanInterval re-reads the folder even without a file-system
	// event, in case one was missed (network file systems send none).
	fileRescanInterval = 30 * time.Second
	// fileDebounce groups the burst of events an editor or a `cp -r`
	// causes into one re-read.
	fileDebounce = 100 * time.Millisecond
	// maxObjectFileSize bounds what one file may hold, so a stray large file
	// in the folder cannot exhaust memory.
	maxObjectFileSize = 8 << 20
)

// FileSource reads Applications and AppProjects from *.yaml, *.yml and *.json
// files under a folder (recursively, several documents per file allowed) and
// emits the same events as the kube source when files change.
type FileSource struct {
	Dir string
	// Namespace is given to objects that name none; DefaultFileNamespace if empty.
	Namespace string
	Log       *slog.Logger
	Metrics   *Metrics

	synced SyncSignal
	// byFile keeps the last readable objects of each file, so a file that
	// turns unreadable keeps its previous objects instead of deleting them.
	byFile map[string][]*unstructured.Unstructured
	mu     sync.Mutex // guards apps, projs and problems for readers other than Start
	apps   map[string]*unstructured.Unstructured
	projs  map[string]*unstructured.Unstructured
	// problems are those of the last read of the folder.
	problems []FileProblem
}

// FileProblem is something in the folder that kept an Application or
// AppProject, or a part of one, from being read: a file or folder that
// cannot be read, a document without a name, a field of the wrong type,
// an object defined twice. What cannot be read now keeps what was read
// from it before, if anything, so a broken edit deletes nothing.
// `run --once` fails on any problem; a long-running process logs each
// when it appears and drops it when the file is fixed.
type FileProblem struct {
	// Path is the file or folder, as found under FileSource.Dir.
	Path string
	// Reason says what is wrong and what was skipped because of it.
	Reason string
}

// String is "path: reason", as `run --once` names the problem.
func (p FileProblem) String() string { return p.Path + ": " + p.Reason }

// Application returns a copy of the Application key ("namespace/name") as
// last read from the files, or false.
func (s *FileSource) Application(key string) (*unstructured.Unstructured, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	u, ok := s.apps[key]
	if !ok {
		return nil, false
	}
	return u.DeepCopy(), true
}

// Problems returns the problems of the last read of the folder, by path;
// none before the first read.
func (s *FileSource) Problems() []FileProblem {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.problems)
}

// Start reads the folder, emits an Added event per object, then watches the
// folder and emits changes until ctx is cancelled.
func (s *FileSource) Start(ctx context.Context, h Handler) error {
	if s.Log == nil {
		s.Log = slog.Default()
	}
	if s.Namespace == "" {
		s.Namespace = DefaultFileNamespace
	}
	if _, err := os.Stat(s.Dir); err != nil {
		return fmt.Errorf("file source: %w", err)
	}
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return fmt.Errorf("file source: watching %s: %w", s.Dir, err)
	}
	defer w.Close()

	d := &dispatcher{handler: h, log: s.Log, metrics: s.Metrics}
	s.byFile = map[string][]*unstructured.Unstructured{}
	s.mu.Lock()
	s.apps = map[string]*unstructured.Unstructured{}
	s.projs = map[string]*unstructured.Unstructured{}
	s.problems = nil
	s.mu.Unlock()
	s.scan(d, w)
	s.synced.Mark()

	return fsdebounce.Loop{Watcher: w, Quiet: fileDebounce, Recheck: fileRescanInterval, Reader: folderScan{s, d, w}}.Run(ctx)
}

// folderScan is the folder as the fsnotify loop's Reader.
type folderScan struct {
	s *FileSource
	d *dispatcher
	w *fsnotify.Watcher
}

var _ fsdebounce.Reader = folderScan{}

func (f folderScan) Reread() { f.s.scan(f.d, f.w) }

func (f folderScan) WatchError(err error) {
	f.s.Log.Warn("file watch error", "dir", f.s.Dir, "error", err)
}

// Synced reports whether the folder was read once.
func (s *FileSource) Synced() bool { return s.synced.IsDone() }

// SyncedDone is closed once the folder was read once.
func (s *FileSource) SyncedDone() <-chan struct{} { return s.synced.Done() }

// scan re-reads every file and emits the difference to the last scan.
func (s *FileSource) scan(d *dispatcher, w *fsnotify.Watcher) {
	var found problemList
	s.readFolder(w, &found)
	apps, projs := s.resolve(&found)
	diff(s.apps, apps, d.app)
	diff(s.projs, projs, d.project)
	s.report(found)
	s.mu.Lock()
	s.apps, s.projs = apps, projs
	s.mu.Unlock()
}

// problemList collects the problems of one scan.
type problemList []FileProblem

func (l *problemList) add(path, reason string) {
	*l = append(*l, FileProblem{Path: path, Reason: reason})
}

// readFolder walks the folder, watches its sub-folders and keeps the
// objects of each file read in s.byFile (dropping files gone).
func (s *FileSource) readFolder(w *fsnotify.Watcher, found *problemList) {
	seen := map[string]bool{}
	err := filepath.WalkDir(s.Dir, func(path string, e fs.DirEntry, err error) error {
		if err != nil {
			found.add(path, fmt.Sprintf("folder skipped: %v", err))
			s.keepUnder(path, seen)
			return nil
		}
		if e.IsDir() {
			if path != s.Dir && strings.HasPrefix(e.Name(), ".") {
				return filepath.SkipDir
			}
			// Adding a watch twice is a no-op; new sub-folders get theirs here.
			if err := w.Add(path); err != nil {
				s.Log.Warn("watching application folder", "path", path, "error", err)
			}
			return nil
		}
		switch strings.ToLower(filepath.Ext(path)) {
		case ".yaml", ".yml", ".json":
		default:
			return nil
		}
		seen[path] = true
		s.readFile(path, e, found)
		return nil
	})
	if err != nil {
		found.add(s.Dir, fmt.Sprintf("folder skipped: %v", err))
	}
	for path := range s.byFile {
		if !seen[path] {
			delete(s.byFile, path)
		}
	}
}

// readFile reads one file's objects into s.byFile.
func (s *FileSource) readFile(path string, e fs.DirEntry, found *problemList) {
	objs, skipped, err := readObjects(path, e)
	switch {
	case errors.Is(err, errVanished):
		// Removed while the folder was read; the removal's own
		// file-system event brings another read.
	case errors.As(err, new(notArgoCDError)) && len(s.byFile[path]) == 0:
		// A template or values file beside the Applications.
		s.Log.Debug("skipping a file that does not parse and names no Argo CD object", "path", path, "error", err)
	case err != nil:
		found.add(path, fmt.Sprintf("file skipped: %v", err))
	default:
		s.byFile[path] = objs
	}
	for _, r := range skipped {
		found.add(path, r)
	}
}

// resolve turns the files' objects into the Applications and AppProjects
// in force: files in name order, a later definition of an object winning.
func (s *FileSource) resolve(found *problemList) (apps, projs map[string]*unstructured.Unstructured) {
	apps = map[string]*unstructured.Unstructured{}
	projs = map[string]*unstructured.Unstructured{}
	from := map[string]string{} // kind and key -> file whose definition is in force
	paths := make([]string, 0, len(s.byFile))
	for p := range s.byFile {
		paths = append(paths, p)
	}
	sort.Strings(paths) // later files win, deterministically
	for _, p := range paths {
		for _, obj := range s.byFile[p] {
			u := obj.DeepCopy()
			if u.GetNamespace() == "" {
				u.SetNamespace(s.Namespace)
			}
			kind, key := u.GetKind(), u.GetNamespace()+"/"+u.GetName()
			target := apps
			if kind == kindAppProject {
				target = projs
				_, _ = TrimProject(u)
			} else {
				_, _ = TrimApplication(u)
				if _, err := AppFromObject(u); err != nil {
					found.add(p, fmt.Sprintf("%v; the Application is skipped", err))
					if _, ok := apps[key]; !ok && s.apps[key] != nil {
						apps[key] = s.apps[key] // as last read
					}
					continue
				}
			}
			if first, dup := from[kind+" "+key]; dup {
				winner := p + ", later in name order,"
				if first == p {
					winner = "a later document of this file"
				}
				found.add(first, fmt.Sprintf("%s %s is ignored here: %s defines it too and wins", kind, key, winner))
			}
			target[key], from[kind+" "+key] = u, p
		}
	}
	return apps, projs
}

// keepUnder marks the files read before under an unreadable folder as
// seen, so they keep their last objects as an unreadable file does.
func (s *FileSource) keepUnder(dir string, seen map[string]bool) {
	prefix := dir + string(filepath.Separator)
	for path := range s.byFile {
		if strings.HasPrefix(path, prefix) {
			seen[path] = true
		}
	}
}

// report logs the problems that are new since the last scan and those
// that went away, and keeps found for Problems. A problem that stays is
// logged once, not at every re-read.
func (s *FileSource) report(found []FileProblem) {
	slices.SortFunc(found, func(a, b FileProblem) int {
		return cmp.Or(strings.Compare(a.Path, b.Path), strings.Compare(a.Reason, b.Reason))
	})
	found = slices.Compact(found)
	s.mu.Lock()
	old := s.problems
	s.problems = found
	s.mu.Unlock()
	for _, p := range found {
		if !slices.Contains(old, p) {
			s.Metrics.invalid("File")
			s.Log.Warn("application file problem", "path", p.Path, "problem", p.Reason)
		}
	}
	for _, p := range old {
		if !slices.Contains(found, p) {
			s.Log.Info("application file problem resolved", "path", p.Path, "problem", p.Reason)
		}
	}
}

// diff emits events that turn the old set into the new one, in key order.
func diff(old, cur map[string]*unstructured.Unstructured,
	emit func(EventType, *unstructured.Unstructured, *unstructured.Unstructured)) {
	keys := make([]string, 0, len(cur)+len(old))
	for k := range cur {
		keys = append(keys, k)
	}
	for k := range old {
		if _, ok := cur[k]; !ok {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		o, n := old[k], cur[k]
		switch {
		case o == nil:
			emit(Added, nil, n)
		case n == nil:
			emit(Deleted, o, nil)
		default:
			emit(Updated, o, n)
		}
	}
}

// errVanished is a file removed between listing the folder and reading it.
var errVanished = errors.New("file removed while the folder was read")

// notArgoCDError is the error of a file that does not parse and does not
// say argoproj.io anywhere, so it would hold no Argo CD object even if it
// did parse: a Helm template or values file in a repository's folder of
// Applications is not a problem of the Applications.
type notArgoCDError struct{ err error }

func (e notArgoCDError) Error() string { return e.err.Error() }
func (e notArgoCDError) Unwrap() error { return e.err }

// readObjects parses the Argo CD objects of one file; other kinds are
// ignored. skipped describes what was left out of the objects it returns
// (see parseObjects).
func readObjects(path string, e fs.DirEntry) (objs []*unstructured.Unstructured, skipped []string, err error) {
	if !e.Type().IsRegular() {
		// Opening a named pipe would block the scan; a link is followed.
		fi, err := os.Stat(path)
		switch {
		case errors.Is(err, fs.ErrNotExist) && isGone(path):
			return nil, nil, errVanished
		case err != nil:
			return nil, nil, err
		case !fi.Mode().IsRegular():
			return nil, nil, fmt.Errorf("not a regular file (%s)", fi.Mode().Type())
		}
	}
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) && isGone(path) {
		return nil, nil, errVanished
	}
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxObjectFileSize+1))
	if err != nil {
		return nil, nil, err
	}
	if len(data) > maxObjectFileSize {
		return nil, nil, fmt.Errorf("file larger than %d bytes", maxObjectFileSize)
	}
	objs, skipped, err = parseObjects(data)
	if err != nil && !bytes.Contains(data, []byte("argoproj.io/")) {
		err = notArgoCDError{err}
	}
	return objs, skipped, err
}

// isGone tells a removed file from a link to nowhere, which is a problem
// to report.
func isGone(path string) bool {
	_, err := os.Lstat(path)
	return errors.Is(err, fs.ErrNotExist)
}

// parseObjects reads the Argo CD objects of a YAML or JSON stream, the
// items of a List among them (`kubectl get applications -o yaml`). A
// document it cannot use fails the whole file. What a real apiserver
// would refuse in an object it reads but can leave out, a label or
// annotation whose value is not a string, is left out and described in
// skipped; the rest of the object is read.
func parseObjects(data []byte) (objs []*unstructured.Unstructured, skipped []string, err error) {
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var r objectReader
	for i := 1; ; i++ {
		var obj map[string]any
		if err := dec.Decode(&obj); err != nil {
			if errors.Is(err, io.EOF) {
				return r.objs, r.skipped, nil
			}
			return nil, nil, fmt.Errorf("document %d: %w", i, err)
		}
		if err := r.add(fmt.Sprintf("document %d", i), obj); err != nil {
			return nil, nil, err
		}
	}
}

// objectReader collects the Argo CD objects of a file.
type objectReader struct {
	objs    []*unstructured.Unstructured
	skipped []string
}

func (r *objectReader) add(where string, obj map[string]any) error {
	if obj == nil {
		return nil // empty document
	}
	u := &unstructured.Unstructured{Object: obj}
	kind := u.GetKind()
	if items, ok := obj["items"].([]any); ok && strings.HasSuffix(kind, "List") {
		for j, item := range items {
			m, ok := item.(map[string]any)
			if !ok {
				return fmt.Errorf("%s, item %d: a %s, not an object", where, j+1, typeName(item))
			}
			if err := r.add(fmt.Sprintf("%s, item %d", where, j+1), m); err != nil {
				return err
			}
		}
		return nil
	}
	if kind != kindApplication && kind != kindAppProject {
		return nil
	}
	switch api := u.GetAPIVersion(); {
	case api == "":
		// kubectl refuses it; the kind alone does not say it is Argo CD's.
		r.skipped = append(r.skipped, fmt.Sprintf("%s: %s without apiVersion is ignored", where, kind))
		return nil
	case !strings.HasPrefix(api, "argoproj.io/"):
		return nil
	}
	md, err := metadataOf(obj)
	if err != nil {
		return fmt.Errorf("%s: %s %w", where, kind, err)
	}
	for _, field := range []string{"labels", "annotations"} {
		r.skipped = append(r.skipped, stringMap(md, field, fmt.Sprintf("%s: %s %q", where, kind, u.GetName()))...)
	}
	r.objs = append(r.objs, u)
	return nil
}

// metadataOf returns the object's metadata, with a name, and a namespace
// that is a string when there is one.
func metadataOf(obj map[string]any) (map[string]any, error) {
	md, ok := obj["metadata"].(map[string]any)
	if !ok {
		if v := obj["metadata"]; v != nil {
			return nil, fmt.Errorf("with metadata a %s, not a map", typeName(v))
		}
		return nil, errors.New("without metadata.name")
	}
	for _, field := range []string{"name", "namespace"} {
		if v, ok := md[field]; ok && v != nil {
			if _, ok := v.(string); !ok {
				return nil, fmt.Errorf("with metadata.%s a %s (%v), not a string", field, typeName(v), v)
			}
		}
	}
	if name, _ := md["name"].(string); name == "" {
		return nil, errors.New("without metadata.name")
	}
	return md, nil
}

// stringMap leaves in metadata.<field> only string values, as Kubernetes
// types labels and annotations; one value of another type would make
// the object's every label or annotation unreadable (unstructured's
// GetAnnotations returns none). A null value is an empty string, as the
// apiserver stores it. It returns what it left out.
func stringMap(md map[string]any, field, what string) []string {
	v, ok := md[field]
	if !ok || v == nil {
		delete(md, field) // null is none
		return nil
	}
	singular := strings.TrimSuffix(field, "s")
	m, ok := v.(map[string]any)
	if !ok {
		delete(md, field)
		return []string{fmt.Sprintf("%s: metadata.%s is a %s, not a map; every %s of it is ignored", what, field, typeName(v), singular)}
	}
	var skipped []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		switch val := m[k].(type) {
		case string:
		case nil:
			m[k] = ""
		case map[string]any, []any:
			delete(m, k)
			skipped = append(skipped, fmt.Sprintf("%s: %s %q is a %s, not a string; that %s is ignored", what, singular, k, typeName(val), singular))
		default:
			delete(m, k)
			skipped = append(skipped, fmt.Sprintf("%s: %s %q is a %s, not a string; that %s is ignored (quote the value: %q)", what, singular, k, typeName(val), singular, fmt.Sprint(val)))
		}
	}
	return skipped
}

// typeName names a decoded YAML or JSON value's type for a message.
func typeName(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "bool"
	case string:
		return "string"
	case map[string]any:
		return "map"
	case []any:
		return "list"
	case float64, int64, int, json.Number:
		return "number"
	}
	return fmt.Sprintf("%T", v)
}
