package controller

import (
	"errors"
	"net/http"
)

// Ready reports whether this replica is ready to serve: every source has
// synced its cache and, if this replica leads, its workers are running. A
// standby replica with synced caches is ready, so it can take over at once.
func (e *Engine) Ready() error {
	if !e.synced.Load() {
		return errors.New("application caches not synced")
	}
	if e.LeaderElection != nil && e.leading.Load() && !e.working.Load() {
		return errors.New("leading but workers not running")
	}
	if e.LeaderElection == nil && !e.working.Load() {
		return errors.New("workers not running")
	}
	return nil
}

// Healthy reports whether the process should be restarted: a leader that
// has failed to renew its lease for too long is unhealthy.
func (e *Engine) Healthy() error {
	e.mu.RLock()
	check := e.health
	e.mu.RUnlock()
	if check != nil {
		return check()
	}
	return nil
}

// Leading reports whether this replica currently holds the lease (always
// true without leader election once workers run).
func (e *Engine) Leading() bool {
	if e.LeaderElection == nil {
		return e.working.Load()
	}
	return e.leading.Load()
}

// HealthHandler serves /healthz and /readyz for kubelet probes.
func (e *Engine) HealthHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", probe(e.Healthy))
	mux.HandleFunc("GET /readyz", probe(e.Ready))
	return mux
}

func probe(check func() error) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		if err := check(); err != nil {
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = w.Write([]byte(err.Error() + "\n"))
			return
		}
		_, _ = w.Write([]byte("ok\n"))
	}
}
