// Package httpserver runs crowsnest's small HTTP endpoints (metrics, health
// probes, the registry webhook receiver) with timeouts and a graceful stop
// on cancel.
package httpserver

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"
)

// Timeouts of every endpoint: probes and scrapes are small and quick, and
// slow clients must not hold connections open.
const (
	readHeaderTimeout = 5 * time.Second
	readTimeout       = 30 * time.Second
	writeTimeout      = 30 * time.Second
	idleTimeout       = 2 * time.Minute
	shutdownTimeout   = 5 * time.Second
)

// Disabled is the bind address that turns an endpoint off, as in
// controller-runtime's --metrics-bind-address.
const Disabled = "0"

// Server is one HTTP endpoint. Listen binds, Serve runs until ctx ends.
type Server struct {
	Name    string
	Addr    string
	Handler http.Handler
	Log     *slog.Logger

	ln net.Listener
}

// Listen binds the address and returns the one actually bound (":0" gives a
// free port), or nil when the endpoint is disabled.
func (s *Server) Listen() (net.Addr, error) {
	if s.Addr == Disabled || s.Addr == "" {
		return nil, nil
	}
	ln, err := net.Listen("tcp", s.Addr)
	if err != nil {
		return nil, fmt.Errorf("%s endpoint: listening on %s: %w", s.Name, s.Addr, err)
	}
	s.ln = ln
	return ln.Addr(), nil
}

// Serve answers requests until ctx is cancelled, then shuts down gracefully.
// Listen must have been called. A disabled endpoint waits for ctx too:
// the daemon ends when any of its tasks does, so returning early would stop
// the whole process.
func (s *Server) Serve(ctx context.Context) error {
	if s.ln == nil {
		<-ctx.Done()
		return nil
	}
	srv := &http.Server{
		Handler:           s.Handler,
		ReadHeaderTimeout: readHeaderTimeout,
		ReadTimeout:       readTimeout,
		WriteTimeout:      writeTimeout,
		IdleTimeout:       idleTimeout,
		BaseContext:       func(net.Listener) context.Context { return ctx },
	}
	errCh := make(chan error, 1)
	go func() { errCh <- srv.Serve(s.ln) }()
	if s.Log != nil {
		s.Log.Info("serving", "endpoint", s.Name, "addr", s.ln.Addr().String())
	}
	select {
	case err := <-errCh:
		return fmt.Errorf("%s endpoint: %w", s.Name, err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		return fmt.Errorf("%s endpoint: shutting down: %w", s.Name, err)
	}
	if err := <-errCh; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("%s endpoint: %w", s.Name, err)
	}
	return nil
}
