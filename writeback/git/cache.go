package git

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"time"
)

// cache holds one clone per repository URL under dir, each behind its own
// lock, and evicts the least recently used clones that are not in use when
// there are more than maxRepos or they take more than maxBytes. It is
// meant for one process: the daemon is leader-elected, so no other writer
// shares the directory.
type cache struct {
	dir      string
	maxRepos int
	maxBytes int64
	metrics  *Metrics

	mu      sync.Mutex
	entries map[string]*cacheEntry
}

type cacheEntry struct {
	lock     chan struct{} // holds one token while a writer uses the clone
	users    int           // writers holding or waiting for the lock
	lastUsed time.Time
}

// cacheKey names a clone's directory: a hash of the URL, so any URL maps
// to a safe, fixed-length name.
func cacheKey(repoURL string) string {
	sum := sha256.Sum256([]byte(repoURL))
	return hex.EncodeToString(sum[:16])
}

// acquire locks the clone of repoURL and returns its directory; release
// unlocks it and trims the cache.
func (c *cache) acquire(ctx context.Context, repoURL string) (dir string, release func(), err error) {
	k := cacheKey(repoURL)
	c.mu.Lock()
	if c.entries == nil {
		c.entries = map[string]*cacheEntry{}
	}
	e := c.entries[k]
	if e == nil {
		e = &cacheEntry{lock: make(chan struct{}, 1)}
		c.entries[k] = e
	}
	e.users++
	c.mu.Unlock()

	select {
	case e.lock <- struct{}{}:
	case <-ctx.Done():
		c.mu.Lock()
		e.users--
		c.mu.Unlock()
		return "", nil, ctx.Err()
	}
	return filepath.Join(c.dir, k), func() {
		c.mu.Lock()
		e.lastUsed = time.Now()
		e.users--
		c.mu.Unlock()
		<-e.lock
		c.trim()
	}, nil
}

// trim removes the least recently used idle clones beyond the bounds.
// Clones found on disk from an earlier run count as used when last
// modified.
func (c *cache) trim() {
	if c.maxRepos <= 0 && c.maxBytes <= 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	dirents, err := os.ReadDir(c.dir)
	if err != nil {
		return
	}
	type clone struct {
		key  string
		used time.Time
		size int64
		busy bool
	}
	var clones []clone
	var total int64
	for _, d := range dirents {
		if !d.IsDir() {
			continue
		}
		cl := clone{key: d.Name()}
		if e := c.entries[cl.key]; e != nil {
			cl.used, cl.busy = e.lastUsed, e.users > 0
		} else if info, err := d.Info(); err == nil {
			cl.used = info.ModTime()
		}
		if c.maxBytes > 0 {
			cl.size = dirSize(filepath.Join(c.dir, cl.key))
			total += cl.size
		}
		clones = append(clones, cl)
	}
	sort.Slice(clones, func(i, j int) bool { return clones[i].used.Before(clones[j].used) })
	count := len(clones)
	for _, cl := range clones {
		over := (c.maxRepos > 0 && count > c.maxRepos) || (c.maxBytes > 0 && total > c.maxBytes)
		if !over {
			break
		}
		if cl.busy {
			continue
		}
		if os.RemoveAll(filepath.Join(c.dir, cl.key)) == nil {
			delete(c.entries, cl.key)
			count--
			total -= cl.size
			c.metrics.evicted()
		}
	}
}

func dirSize(dir string) int64 {
	var n int64
	_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if info, err := d.Info(); err == nil {
				n += info.Size()
			}
		}
		return nil
	})
	return n
}
