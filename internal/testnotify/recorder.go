package testnotify

import (
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
)

// maxRecordedBody is the most of a request body a Recorder keeps; far
// above what any service test sends, and a bound all the same.
const maxRecordedBody = 32 << 20

// Request is one request a Recorder received.
type Request struct {
	Method, Host, Path, Query string
	// EscapedPath is Path as it was sent, escapes kept (GitLab's
	// "projects/group%2Fproject").
	EscapedPath string
	Header      http.Header
	Body        string
}

// Answer is what a Recorder replies to one request: Status (200 when 0),
// each Header, then Body.
type Answer struct {
	Status int
	Header map[string]string
	Body   string
}

// RecorderOptions shape a Recorder; the zero value is a plain-HTTP
// server answering 200 with no body.
type RecorderOptions struct {
	// TLS serves HTTPS with httptest's certificate (Recorder.Client
	// trusts it).
	TLS bool
	// Answer, when set, answers each request once it is recorded. It runs
	// on the server's goroutines, one per request.
	Answer func(Request) Answer
}

// Recorder is a local HTTP server standing in for a notification
// service (Slack, a webhook, a service's API): it records every request
// and answers it, so a test asserts on what a sender put on the wire.
type Recorder struct {
	*httptest.Server
	answer func(Request) Answer
	mu     sync.Mutex
	reqs   []Request
}

// NewRecorder starts a Recorder that stops when the test ends.
func NewRecorder(t *testing.T, opts RecorderOptions) *Recorder {
	t.Helper()
	rec := &Recorder{answer: opts.Answer}
	h := http.HandlerFunc(rec.serve)
	if opts.TLS {
		rec.Server = httptest.NewTLSServer(h)
	} else {
		rec.Server = httptest.NewServer(h)
	}
	t.Cleanup(rec.Close)
	return rec
}

func (rec *Recorder) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(r.Body, maxRecordedBody))
	req := Request{Method: r.Method, Host: r.Host, Path: r.URL.Path, EscapedPath: r.URL.EscapedPath(), Query: r.URL.RawQuery, Header: r.Header.Clone(), Body: string(body)}
	rec.mu.Lock()
	rec.reqs = append(rec.reqs, req)
	rec.mu.Unlock()
	var a Answer
	if rec.answer != nil {
		a = rec.answer(req)
	}
	for k, v := range a.Header {
		w.Header().Set(k, v)
	}
	if a.Status != 0 {
		w.WriteHeader(a.Status)
	}
	_, _ = io.WriteString(w, a.Body)
}

// Requests returns the requests received so far, in order.
func (rec *Recorder) Requests() []Request {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return slices.Clone(rec.reqs)
}

// Bodies returns the bodies of the requests received so far, in order.
func (rec *Recorder) Bodies() []string {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	out := make([]string, len(rec.reqs))
	for i, r := range rec.reqs {
		out[i] = r.Body
	}
	return out
}
