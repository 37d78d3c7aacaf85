package reload

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/crowsnest-dev/crowsnest/config"
	"github.com/crowsnest-dev/crowsnest/internal/fsdebounce"
)

const (
	// reloadDebounce groups the burst of events one edit causes (write,
	// chmod, rename; kubelet's symlink swap is several) into one reload.
	reloadDebounce = 100 * time.Millisecond
	// recheckInterval re-reads the file without an event, in case one was
	// missed (some volume types send none).
	recheckInterval = 30 * time.Second
)

// Watcher keeps the current config of one file and reloads it when the file
// changes. It watches the file's folder, which catches in-place writes,
// editors' rename-over and the `..data` symlink swap of a mounted ConfigMap.
type Watcher struct {
	Path string
	Log  *slog.Logger
	// Applier, when set, checks each parsed new version further and
	// applies the accepted ones.
	Applier Applier
	Metrics *Metrics

	current  atomic.Pointer[config.Config]
	lastHash [sha256.Size]byte
	badHash  [sha256.Size]byte
}

// Applier is what takes new versions of the config (the daemon's
// reloader).
type Applier interface {
	// Accept checks a parsed new version further (what needs packages
	// above config: trigger expressions, image policies); an error
	// rejects it like a parse error, and the old one stays.
	Accept(cur *config.Config) error
	// Apply is called after a reload that accepted different content.
	Apply(old, cur *config.Config)
}

// Load reads the file for the first time; call it before Start.
func (w *Watcher) Load() (*config.Config, error) {
	data, err := os.ReadFile(w.Path)
	if err != nil {
		return nil, fmt.Errorf("reading config: %w", err)
	}
	c, err := config.Parse(data)
	if err != nil {
		return nil, fmt.Errorf("config %s:\n%w", w.Path, err)
	}
	w.lastHash = sha256.Sum256(data)
	w.current.Store(c)
	return c, nil
}

// Current returns the config in force.
func (w *Watcher) Current() *config.Config { return w.current.Load() }

// Start watches the file until ctx is cancelled.
func (w *Watcher) Start(ctx context.Context) error {
	if w.current.Load() == nil {
		return errors.New("config watcher: Load must succeed before Start")
	}
	if w.Log == nil {
		w.Log = slog.Default()
	}
	fw, err := fsnotify.NewWatcher()
	if err != nil {
		return fmt.Errorf("watching config: %w", err)
	}
	defer fw.Close()
	if err := fw.Add(filepath.Dir(w.Path)); err != nil {
		return fmt.Errorf("watching config folder %s: %w", filepath.Dir(w.Path), err)
	}
	// A change between Load and the watch being set up sends no event.
	w.reload()
	return fsdebounce.Loop{Watcher: fw, Quiet: reloadDebounce, Recheck: recheckInterval, Reader: watchedFile{w}}.Run(ctx)
}

// watchedFile is the config file as the fsnotify loop's Reader.
type watchedFile struct{ w *Watcher }

var _ fsdebounce.Reader = watchedFile{}

func (f watchedFile) Reread() { f.w.reload() }

func (f watchedFile) WatchError(err error) {
	f.w.Log.Warn("config watch error", "path", f.w.Path, "error", err)
}

// reload re-reads the file and applies it if it changed and is valid.
func (w *Watcher) reload() {
	data, err := os.ReadFile(w.Path)
	if err != nil {
		// A ConfigMap swap removes the file for an instant; a later event
		// or the recheck brings it back. Keep the config in force.
		w.Log.Warn("config file unreadable; keeping the current config", "path", w.Path, "error", err)
		return
	}
	hash := sha256.Sum256(data)
	if hash == w.lastHash || hash == w.badHash {
		return
	}
	c, err := config.Parse(data)
	if err == nil && w.Applier != nil {
		err = w.Applier.Accept(c)
	}
	if err != nil {
		w.badHash = hash
		w.Metrics.loaded(false)
		w.Log.Error("config reload rejected", "path", w.Path, "error", err)
		return
	}
	w.lastHash = hash
	w.badHash = [sha256.Size]byte{}
	old := w.current.Swap(c)
	w.Metrics.loaded(true)
	if w.Applier != nil {
		w.Applier.Apply(old, c)
	}
}
