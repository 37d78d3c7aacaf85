package faults

import (
	"encoding/json"
	"io"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/crowsnest-dev/crowsnest/notify"
)

// sinkFault is how the webhook sink misbehaves while a fault is on.
type sinkFault int

// Sink faults: answer 429 with Retry-After, answer 500 or 503 in turn,
// hold the request without answering until the sender gives up, or be
// down (connections refused).
const (
	sinkOK sinkFault = iota
	sink429
	sink5xx
	sinkHang
	sinkDown
)

// sink is a webhook receiver on a fixed 127.0.0.1 address that counts the
// messages it acknowledged (answered 2xx) by what they announce, and can
// be made to fail. A message it did not acknowledge is not delivered: the
// sender must try again, and an acknowledged one sent again is a
// duplicate.
type sink struct {
	addr string

	mu       sync.Mutex
	srv      *http.Server
	fault    sinkFault
	injected int
	acked    map[string]int
	ids      deliveryIDs
	release  chan struct{} // closed to end hanging requests
}

// startSink serves until the test ends.
func startSink(t *testing.T) *sink {
	t.Helper()
	s := &sink{acked: map[string]int{}, ids: deliveryIDs{}, release: make(chan struct{})}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s.addr = l.Addr().String()
	s.serve(l)
	t.Cleanup(func() {
		s.mu.Lock()
		select {
		case <-s.release:
		default:
			close(s.release)
		}
		srv := s.srv
		s.mu.Unlock()
		if srv != nil {
			_ = srv.Close()
		}
	})
	return s
}

// URL is the base URL the daemon's webhook services post to.
func (s *sink) URL() string { return "http://" + s.addr }

func (s *sink) serve(l net.Listener) {
	srv := &http.Server{Handler: http.HandlerFunc(s.handle), ReadHeaderTimeout: 10 * time.Second}
	s.mu.Lock()
	s.srv = srv
	s.mu.Unlock()
	go func() { _ = srv.Serve(l) }()
}

// setFault switches the fault; sinkDown closes the listener and every
// connection, and leaving it listens again on the same address.
func (s *sink) setFault(t *testing.T, f sinkFault) {
	t.Helper()
	s.mu.Lock()
	prev := s.fault
	s.fault = f
	srv := s.srv
	if prev == sinkHang && f != sinkHang {
		close(s.release)
		s.release = make(chan struct{})
	}
	s.mu.Unlock()
	switch {
	case f == sinkDown && prev != sinkDown:
		_ = srv.Close()
	case prev == sinkDown && f != sinkDown:
		s.serve(listenAgain(t, s.addr))
	}
}

// listenAgain listens on addr again after an outage. The port was ours a
// moment ago; another process taking it in between is unlikely but would
// show as a clear failure.
func listenAgain(t *testing.T, addr string) net.Listener {
	t.Helper()
	var l net.Listener
	var err error
	for range 50 {
		if l, err = net.Listen("tcp", addr); err == nil {
			return l
		}
		time.Sleep(100 * time.Millisecond) // sleep-ok: retry interval while the port is released
	}
	t.Fatalf("listening again on %s: %v", addr, err)
	return nil
}

func (s *sink) handle(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	fault, release := s.fault, s.release
	if fault != sinkOK && fault != sinkDown {
		s.injected++
	}
	n := s.injected
	s.mu.Unlock()
	switch fault {
	case sink429:
		w.Header().Set("Retry-After", "1")
		http.Error(w, "slow down", http.StatusTooManyRequests)
		return
	case sink5xx:
		code := http.StatusInternalServerError
		if n%2 == 0 {
			code = http.StatusServiceUnavailable
		}
		http.Error(w, "sink failing", code)
		return
	case sinkHang:
		select {
		case <-r.Context().Done(): // the sender gave up
		case <-release:
			http.Error(w, "sink was hanging", http.StatusServiceUnavailable)
		}
		return
	}
	key := messageKey(body)
	s.mu.Lock()
	s.acked[key]++
	s.ids.add(key, r.Header.Get(notify.DeliveryHeader))
	s.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}

// messageKey names what a catalog webhook message announces:
// namespace/app|image|to for an image update.
func messageKey(body []byte) string {
	var m struct {
		Event     string `json:"event"`
		App       string `json:"app"`
		Namespace string `json:"namespace"`
		Image     string `json:"image"`
		To        string `json:"to"`
	}
	if err := json.Unmarshal(body, &m); err != nil || m.Event == "" {
		return "raw:" + string(body)
	}
	return m.Event + " " + updateKey(m.Namespace+"/"+m.App, m.Image, m.To)
}

func updateKey(app, image, to string) string { return app + "|" + image + "|" + to }

// deliveryIDs is, per message key, the delivery IDs (X-Crowsnest-Delivery,
// the Message-ID) acknowledged: a repeat of one ID is the outbox sending
// one delivery again (at-least-once, and a receiver can drop it), a second
// ID is crowsnest announcing one thing twice.
type deliveryIDs map[string]map[string]bool

func (d deliveryIDs) add(key, id string) {
	if d[key] == nil {
		d[key] = map[string]bool{}
	}
	d[key][id] = true
}

func (d deliveryIDs) distinct() map[string]int {
	out := make(map[string]int, len(d))
	for k, ids := range d {
		out[k] = len(ids)
	}
	return out
}

// distinctDeliveries returns how many delivery IDs were acknowledged per
// key.
func (s *sink) distinctDeliveries() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ids.distinct()
}

// counts returns a copy of the acknowledged messages by key.
func (s *sink) counts() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]int, len(s.acked))
	for k, v := range s.acked {
		out[k] = v
	}
	return out
}
