package controller

import (
	"log/slog"
	"sync"

	"github.com/crowsnest-dev/crowsnest/config"
	"github.com/crowsnest-dev/crowsnest/controller/imageupdate"
)

// PolicySource compiles the config's image policies once per config
// version. The config in force was checked with imageupdate.CompilePolicies
// when it was loaded, so a failure here only keeps the last good set.
type PolicySource struct {
	Config func() *config.Config
	Log    *slog.Logger

	mu       sync.Mutex
	cfg      *config.Config
	policies *imageupdate.Policies
}

// Policies returns the compiled policies in force.
func (s *PolicySource) Policies() *imageupdate.Policies {
	s.mu.Lock()
	defer s.mu.Unlock()
	if cfg := s.Config(); cfg != s.cfg {
		p, err := imageupdate.CompilePolicies(cfg.ImagePolicies)
		if err != nil {
			s.Log.Error("image policies do not compile; keeping the previous ones", "error", err)
		} else {
			s.cfg, s.policies = cfg, p
		}
	}
	return s.policies
}
