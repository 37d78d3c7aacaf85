package testnotify

import (
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
)

// Requests is an API double that records which requests a service made,
// as "METHOD path", and answers each with one status and body (GitHub's
// REST API for a token: 201 and a JSON object).
type Requests struct {
	// URL is the server's root.
	URL string
	mu  sync.Mutex
	got []string
}

// NewRequests starts a Requests answering status and body; it stops when
// the test ends.
func NewRequests(t *testing.T, status int, body string) *Requests {
	t.Helper()
	rs := &Requests{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rs.mu.Lock()
		rs.got = append(rs.got, r.Method+" "+r.URL.Path)
		rs.mu.Unlock()
		w.WriteHeader(status)
		_, _ = w.Write([]byte(body))
	}))
	t.Cleanup(srv.Close)
	rs.URL = srv.URL
	return rs
}

// All returns the requests received so far, in order.
func (rs *Requests) All() []string {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	return slices.Clone(rs.got)
}
