package watcher

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fsnotify/fsnotify"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
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

	synced atomic.Bool
	// byFile keeps the last readable objects of each file, so a file that
	// turns unreadable keeps its previous objects instead of deleting them.
	byFile map[string][]*unstructured.Unstructured
	mu     sync.Mutex // guards apps and projs for readers other than Start
	apps   map[string]*unstructured.Unstructured
	projs  map[string]*unstructured.Unstructured
}

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
	s.mu.Unlock()
	s.scan(d, w)
	s.synced.Store(true)

	ticker := time.NewTicker(fileRescanInterval)
	defer ticker.Stop()
	var debounce <-chan time.Time
	for {
		select {
		case <-ctx.Done():
			return nil
		case _, ok := <-w.Events:
			if !ok {
				return nil
			}
			if debounce == nil {
				debounce = time.After(fileDebounce)
			}
		case err, ok := <-w.Errors:
			if !ok {
				return nil
			}
			s.Log.Warn("file watch error", "dir", s.Dir, "error", err)
		case <-debounce:
			debounce = nil
			s.scan(d, w)
		case <-ticker.C:
			s.scan(d, w)
		}
	}
}

// Synced reports whether the folder was read once.
func (s *FileSource) Synced() bool { return s.synced.Load() }

// scan re-reads every file and emits the difference to the last scan.
func (s *FileSource) scan(d *dispatcher, w *fsnotify.Watcher) {
	seen := map[string]bool{}
	err := filepath.WalkDir(s.Dir, func(path string, e fs.DirEntry, err error) error {
		if err != nil {
			s.Log.Warn("reading application folder", "path", path, "error", err)
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
		objs, err := readObjects(path)
		if err != nil {
			s.Metrics.invalid("File")
			s.Log.Error("skipping unreadable application file; keeping its last good objects", "path", path, "error", err)
			return nil
		}
		s.byFile[path] = objs
		return nil
	})
	if err != nil {
		s.Log.Warn("reading application folder", "dir", s.Dir, "error", err)
	}
	for path := range s.byFile {
		if !seen[path] {
			delete(s.byFile, path)
		}
	}

	apps := map[string]*unstructured.Unstructured{}
	projs := map[string]*unstructured.Unstructured{}
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
			key := u.GetNamespace() + "/" + u.GetName()
			target := apps
			if u.GetKind() == kindAppProject {
				target = projs
			}
			if _, dup := target[key]; dup {
				s.Log.Warn("object defined twice; the later file wins", "kind", u.GetKind(), "key", key, "path", p)
			}
			target[key] = u
		}
	}
	diff(s.apps, apps, TrimApplication, d.app)
	diff(s.projs, projs, TrimProject, d.project)
	s.mu.Lock()
	s.apps, s.projs = apps, projs
	s.mu.Unlock()
}

// diff emits events that turn the old set into the new one, in key order.
func diff(old, cur map[string]*unstructured.Unstructured, trim func(any) (any, error),
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
		if n != nil {
			_, _ = trim(n)
		}
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

// readObjects parses the Argo CD objects of one file; other kinds are ignored.
func readObjects(path string) ([]*unstructured.Unstructured, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxObjectFileSize+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxObjectFileSize {
		return nil, fmt.Errorf("file larger than %d bytes", maxObjectFileSize)
	}
	return parseObjects(data)
}

// parseObjects reads the Argo CD objects of a YAML or JSON stream.
func parseObjects(data []byte) ([]*unstructured.Unstructured, error) {
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var out []*unstructured.Unstructured
	for i := 0; ; i++ {
		var obj map[string]any
		if err := dec.Decode(&obj); err != nil {
			if errors.Is(err, io.EOF) {
				return out, nil
			}
			return nil, fmt.Errorf("document %d: %w", i+1, err)
		}
		if obj == nil {
			continue // empty document
		}
		u := &unstructured.Unstructured{Object: obj}
		if !strings.HasPrefix(u.GetAPIVersion(), "argoproj.io/") {
			continue
		}
		if k := u.GetKind(); k != kindApplication && k != kindAppProject {
			continue
		}
		if u.GetName() == "" {
			return nil, fmt.Errorf("document %d: %s without metadata.name", i+1, u.GetKind())
		}
		out = append(out, u)
	}
}
