package journal

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
)

// File keeps Intents in one JSON file: local mode's
// journal (--apps-dir), where there is no cluster to hold ConfigMaps. Each
// Save rewrites the file through a temporary file and a rename, so a
// process killed at any point leaves the journal before or after the
// save, never half of one. The file is not flushed to disk (fsync): a
// killed process loses nothing by that, a lost machine loses only the
// recovery of announcements. One process at a time writes a file.
type File struct {
	// Path is the journal file; its folder is created when missing.
	Path string

	mu     sync.Mutex
	loaded bool
	data   map[string]json.RawMessage
}

var _ Store = (*File)(nil)

// FileName names local mode's journal file for the Applications
// folder appsDir: one file per folder, so one state directory serves
// several folders whose Applications share names.
func FileName(stateDir, appsDir string) string {
	if abs, err := filepath.Abs(appsDir); err == nil {
		appsDir = abs
	}
	sum := sha256.Sum256([]byte(appsDir))
	return filepath.Join(stateDir, "write-intents-"+hex.EncodeToString(sum[:8])+".json")
}

// LoadAll implements Store. A missing file is an empty journal;
// undecodable entries, or a file that is not a JSON object, are skipped
// (the next Save writes a sound file).
func (j *File) LoadAll(_ context.Context) (map[string]Intent, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if err := j.loadLocked(); err != nil {
		return nil, err
	}
	out := make(map[string]Intent, len(j.data))
	for key, raw := range j.data {
		var in Intent
		if json.Unmarshal(raw, &in) == nil {
			out[key] = in
		}
	}
	return out, nil
}

// Save implements Store.
func (j *File) Save(_ context.Context, key string, in *Intent) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if err := j.loadLocked(); err != nil {
		return err
	}
	if in == nil {
		if _, ok := j.data[key]; !ok {
			return nil
		}
		delete(j.data, key)
	} else {
		raw, err := json.Marshal(in)
		if err != nil {
			return err
		}
		j.data[key] = raw
	}
	return j.writeLocked()
}

func (j *File) loadLocked() error {
	if j.loaded {
		return nil
	}
	j.data = map[string]json.RawMessage{}
	b, err := os.ReadFile(j.Path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return fmt.Errorf("reading the write journal: %w", err)
	default:
		if json.Unmarshal(b, &j.data) != nil {
			j.data = map[string]json.RawMessage{}
		}
	}
	j.loaded = true
	return nil
}

func (j *File) writeLocked() error {
	b, err := json.MarshalIndent(j.data, "", "  ")
	if err != nil {
		return err
	}
	dir := filepath.Dir(j.Path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("writing the write journal: %w", err)
	}
	tmp, err := os.CreateTemp(dir, filepath.Base(j.Path)+".*")
	if err != nil {
		return fmt.Errorf("writing the write journal: %w", err)
	}
	_, err = tmp.Write(append(b, '\n'))
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), j.Path)
	}
	if err != nil {
		_ = os.Remove(tmp.Name())
		return fmt.Errorf("writing the write journal: %w", err)
	}
	return nil
}
