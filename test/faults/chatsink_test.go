package faults

import (
	"fmt"
	"maps"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// Slack emulator settings: the bot token the daemon's service reads from a
// file (the emulator refuses any other, as Slack would), the service the
// Applications subscribe to and the start of their channels' names.
const (
	slackToken   = "xoxb-faults-token"
	slackService = "chat"
	slackChannel = "deploys-"
)

// chatSink emulates Slack's Web API (chat.postMessage) on a fixed
// 127.0.0.1 address. It acknowledges a post with {"ok":true,...}, counts
// the messages it acknowledged by what they announce, and can be made to
// fail the ways the webhook sink can, except that a hanging request is
// never answered: only the client's timeout (15s for Slack) ends it. A
// message it did not acknowledge is not delivered; an acknowledged one
// posted again is a duplicate.
type chatSink struct {
	addr      string
	tokenFile string

	mu       sync.Mutex
	srv      *http.Server
	fault    sinkFault
	injected int
	// abandoned counts hanging requests the client gave up on.
	abandoned int
	posts     int
	acked     map[string]int
	stop      chan struct{} // closed when the test ends, to end hanging requests
}

var _ destination = (*chatSink)(nil)

// startChatSink serves until the test ends.
func startChatSink(t *testing.T) *chatSink {
	t.Helper()
	s := &chatSink{acked: map[string]int{}, stop: make(chan struct{}), tokenFile: filepath.Join(t.TempDir(), "slack-token")}
	if err := os.WriteFile(s.tokenFile, []byte(slackToken), 0o600); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s.addr = l.Addr().String()
	s.serve(l)
	t.Cleanup(func() {
		close(s.stop)
		s.mu.Lock()
		srv := s.srv
		s.mu.Unlock()
		_ = srv.Close()
	})
	return s
}

// subscription gives each Application a channel of its own: the outbox
// delivers to a destination one message at a time, so each message meets
// the fault.
func (s *chatSink) subscription(app string) (service, recipient string) {
	return slackService, slackChannel + app
}

func (s *chatSink) config() string {
	return fmt.Sprintf("  services:\n    %s:\n      slack: {token: \"file:%s\", apiURL: \"http://%s/api/\"}\n%s",
		slackService, s.tokenFile, s.addr, announceTemplate)
}

func (s *chatSink) serve(l net.Listener) {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /api/chat.postMessage", s.postMessage)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	s.mu.Lock()
	s.srv = srv
	s.mu.Unlock()
	go func() { _ = srv.Serve(l) }()
}

// setFault switches the fault; sinkDown closes the listener and every
// connection, and leaving it listens again on the same address. Requests
// already hanging keep hanging until their client gives up.
func (s *chatSink) setFault(t *testing.T, f sinkFault) {
	t.Helper()
	s.mu.Lock()
	prev := s.fault
	s.fault = f
	srv := s.srv
	s.mu.Unlock()
	switch {
	case f == sinkDown && prev != sinkDown:
		_ = srv.Close()
	case prev == sinkDown && f != sinkDown:
		s.serve(listenAgain(t, s.addr))
	}
}

func (s *chatSink) postMessage(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 1<<20)
	if err := r.ParseForm(); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	fault := s.fault
	if fault != sinkOK && fault != sinkDown {
		s.injected++
	}
	n := s.injected
	s.mu.Unlock()
	switch fault {
	case sink429:
		w.Header().Set("Retry-After", "1")
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusTooManyRequests)
		_, _ = w.Write([]byte(`{"ok":false,"error":"ratelimited"}`))
		return
	case sink5xx:
		code := http.StatusInternalServerError
		if n%2 == 0 {
			code = http.StatusServiceUnavailable
		}
		// Slack answers its 5xx with an HTML page.
		w.Header().Set("Content-Type", "text/html")
		w.WriteHeader(code)
		_, _ = w.Write([]byte("<html><body>Slack is having trouble</body></html>"))
		return
	case sinkHang:
		select {
		case <-r.Context().Done():
			s.mu.Lock()
			s.abandoned++
			s.mu.Unlock()
		case <-s.stop:
		}
		return
	}
	token := r.PostForm.Get("token")
	if token == "" {
		token = strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
	}
	w.Header().Set("Content-Type", "application/json")
	channel := r.PostForm.Get("channel")
	switch {
	case token != slackToken:
		_, _ = w.Write([]byte(`{"ok":false,"error":"invalid_auth"}`))
		return
	case !strings.HasPrefix(channel, slackChannel):
		_, _ = w.Write([]byte(`{"ok":false,"error":"channel_not_found"}`))
		return
	}
	s.mu.Lock()
	s.posts++
	ts := fmt.Sprintf("1700000000.%06d", s.posts)
	s.acked[messageKey([]byte(r.PostForm.Get("text")))]++
	s.mu.Unlock()
	_, _ = fmt.Fprintf(w, `{"ok":true,"channel":"C0DEPLOYS","ts":%q,"message":{"type":"message","ts":%q}}`, ts, ts)
}

// faultsMet returns how many requests met a fault, and how many of those
// hung until the client gave up.
func (s *chatSink) faultsMet() (injected, abandoned int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.injected, s.abandoned
}

// counts returns a copy of the acknowledged messages by key.
func (s *chatSink) counts() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.acked)
}
