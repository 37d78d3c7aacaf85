package controller

import (
	"log/slog"
	"sort"
	"sync"

	"github.com/crowsnest-dev/crowsnest/watcher"

	"github.com/crowsnest-dev/crowsnest/config"
	"github.com/crowsnest-dev/crowsnest/windows"
)

// WindowSource assembles the sync windows in force: the config's, and
// every AppProject's spec.syncWindows, each compiled once per version.
type WindowSource struct {
	Engine *Engine
	Config func() *config.Config
	Log    *slog.Logger
	// Namespace is Argo CD's: only AppProjects there count, as Argo CD
	// reads no others, so one a team makes in its own namespace holds
	// nobody's updates. "" takes every namespace's (local mode).
	Namespace string

	mu       sync.Mutex
	cfg      *config.Config
	cfgSet   windows.Set
	projects map[string]compiledProject
}

type compiledProject struct {
	rv   string
	name string
	set  windows.Set
	err  error
}

// Set returns the windows in force now.
func (s *WindowSource) Set() windows.Set {
	s.mu.Lock()
	defer s.mu.Unlock()
	if cfg := s.Config(); cfg != s.cfg {
		set, err := windows.FromConfig(cfg.Windows)
		if err != nil {
			// Validation compiled them already; keep the last good set.
			s.Log.Error("sync windows of the config do not compile", "error", err)
		} else {
			s.cfg, s.cfgSet = cfg, set
		}
	}
	out := append(windows.Set(nil), s.cfgSet...)
	if s.projects == nil {
		s.projects = map[string]compiledProject{}
	}
	var projects []*watcher.Project
	if s.Engine != nil { // nil: the config's windows only
		projects = s.Engine.Projects()
	}
	sort.Slice(projects, func(i, j int) bool { return projects[i].Key() < projects[j].Key() })
	seen := map[string]bool{}
	for _, p := range projects {
		if s.Namespace != "" && p.Namespace != s.Namespace {
			continue
		}
		key := p.Key()
		seen[key] = true
		c, ok := s.projects[key]
		if !ok || c.rv != p.ResourceVersion {
			set, err := windows.FromAppProject(p.Object.Object)
			if err != nil {
				s.Log.Warn("AppProject sync window invalid; it is left out", "project", key, "error", err)
			}
			c = compiledProject{rv: p.ResourceVersion, name: p.Name, set: set, err: err}
			s.projects[key] = c
		}
		out = append(out, c.set...)
	}
	for key := range s.projects {
		if !seen[key] {
			delete(s.projects, key)
		}
	}
	return out
}

// Broken returns why the AppProject named project has sync windows that do
// not compile, or nil. Argo CD refuses syncs for such a project; crowsnest
// likewise holds the project's write-backs until the windows are fixed,
// rather than act on a partial set.
func (s *WindowSource) Broken(project string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.projects {
		if c.name == project && c.err != nil {
			return c.err
		}
	}
	return nil
}

// PullRequestsInDenyWindows says whether the config lets pull-request
// write-backs through deny windows (git.pullRequestsInDenyWindows).
func (s *WindowSource) PullRequestsInDenyWindows() bool {
	if s.Config == nil {
		return false
	}
	c := s.Config()
	return c != nil && c.Git.PullRequestsInDenyWindows
}
