package testnotify

import (
	"testing"
)

// Requests is an API double that records which requests a service made,
// as "METHOD path", and answers each with one status and body (GitHub's
// REST API for a token: 201 and a JSON object).
type Requests struct {
	// URL is the server's root.
	URL string
	rec *Recorder
}

// NewRequests starts a Requests answering status and body; it stops when
// the test ends.
func NewRequests(t *testing.T, status int, body string) *Requests {
	t.Helper()
	rec := NewRecorder(t, RecorderOptions{Answer: func(Request) Answer { return Answer{Status: status, Body: body} }})
	return &Requests{URL: rec.URL, rec: rec}
}

// All returns the requests received so far, in order.
func (rs *Requests) All() []string {
	reqs := rs.rec.Requests()
	out := make([]string, len(reqs))
	for i, r := range reqs {
		out[i] = r.Method + " " + r.Path
	}
	return out
}
