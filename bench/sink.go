package main

import (
	"encoding/json"
	"io"
	"net"
	"net/http"
	"sync"
	"time"
)

// sink is the webhook notification destination: it records when each
// (event, app) message arrived and how often.
type sink struct {
	srv *http.Server
	url string

	mu       sync.Mutex
	received map[[2]string][]time.Time
	total    int
	cond     chan struct{}
}

func startSink() (*sink, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s := &sink{url: "http://" + ln.Addr().String(), received: map[[2]string][]time.Time{}, cond: make(chan struct{})}
	s.srv = &http.Server{Handler: http.HandlerFunc(s.serve), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = s.srv.Serve(ln) }()
	return s, nil
}

func (s *sink) close() { _ = s.srv.Close() }

func (s *sink) serve(w http.ResponseWriter, r *http.Request) {
	at := time.Now()
	var msg struct {
		Event string `json:"event"`
		App   string `json:"app"`
	}
	body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	_ = json.Unmarshal(body, &msg)
	s.mu.Lock()
	key := [2]string{msg.Event, msg.App}
	s.received[key] = append(s.received[key], at)
	s.total++
	close(s.cond)
	s.cond = make(chan struct{})
	s.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}

// duplicates returns the keys that arrived more than once with their
// arrival times, at most n of them.
func (s *sink) duplicates(n int) map[[2]string][]time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[[2]string][]time.Time{}
	for k, ts := range s.received {
		if len(ts) > 1 && len(out) < n {
			out[k] = append([]time.Time(nil), ts...)
		}
	}
	return out
}

// snapshot returns the first arrival of every (event, app), the number of
// messages and the number of duplicates (messages beyond the first per
// key), and a channel closed at the next arrival.
func (s *sink) snapshot() (first map[[2]string]time.Time, total, dups int, next <-chan struct{}) {
	s.mu.Lock()
	defer s.mu.Unlock()
	first = make(map[[2]string]time.Time, len(s.received))
	for k, ts := range s.received {
		first[k] = ts[0]
		dups += len(ts) - 1
	}
	return first, s.total, dups, s.cond
}
