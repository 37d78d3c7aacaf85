package faults

import (
	"cmp"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"maps"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
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
	// byID makes the subscriptions name channels by ID (C...), as
	// crowsnest needs to search a channel it never posted to.
	byID bool
	// perSecond, when set, is the pace configured for the service
	// (Slack's default is 5 messages/s).
	perSecond int
	// history keeps the acknowledged posts by channel ID, for
	// conversations.history.
	history map[string][]chatMessage
	stop    chan struct{} // closed when the test ends, to end hanging requests
}

type chatMessage struct {
	TS       string          `json:"ts"`
	ThreadTS string          `json:"thread_ts,omitempty"`
	Text     string          `json:"text"`
	Metadata json.RawMessage `json:"metadata,omitempty"`
}

// chatChannelID is the ID the emulator gives the channel called name.
func chatChannelID(name string) string {
	h := fnv.New32a()
	_, _ = h.Write([]byte(name))
	return fmt.Sprintf("C%08X", h.Sum32())
}

var _ destination = (*chatSink)(nil)

// startChatSink serves until the test ends.
func startChatSink(t *testing.T) *chatSink {
	t.Helper()
	s := &chatSink{acked: map[string]int{}, history: map[string][]chatMessage{}, stop: make(chan struct{}), tokenFile: filepath.Join(t.TempDir(), "slack-token")}
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
	if s.byID {
		return slackService, chatChannelID(slackChannel + app)
	}
	return slackService, slackChannel + app
}

func (s *chatSink) config() string {
	rate := ""
	if s.perSecond > 0 {
		rate = fmt.Sprintf("      rateLimit: {perSecond: %d, burst: %d}\n", s.perSecond, s.perSecond)
	}
	return fmt.Sprintf("  services:\n    %s:\n      slack: {token: \"file:%s\", apiURL: \"http://%s/api/\"}\n%s%s",
		slackService, s.tokenFile, s.addr, rate, announceTemplate)
}

func (s *chatSink) serve(l net.Listener) {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /api/chat.postMessage", s.postMessage)
	mux.HandleFunc("POST /api/conversations.history", s.conversationsHistory)
	mux.HandleFunc("POST /api/conversations.replies", s.conversationsHistory)
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
	case !strings.HasPrefix(channel, slackChannel) && !strings.HasPrefix(channel, "C"):
		_, _ = w.Write([]byte(`{"ok":false,"error":"channel_not_found"}`))
		return
	}
	id := channel
	if strings.HasPrefix(channel, slackChannel) {
		id = chatChannelID(channel)
	}
	s.mu.Lock()
	s.posts++
	ts := fmt.Sprintf("%d.%06d", time.Now().Unix(), s.posts)
	s.acked[messageKey([]byte(r.PostForm.Get("text")))]++
	s.history[id] = append(s.history[id], chatMessage{TS: ts, ThreadTS: r.PostForm.Get("thread_ts"), Text: r.PostForm.Get("text"), Metadata: json.RawMessage(cmp.Or(r.PostForm.Get("metadata"), "null"))})
	s.mu.Unlock()
	_, _ = fmt.Fprintf(w, `{"ok":true,"channel":%q,"ts":%q,"message":{"type":"message","ts":%q}}`, id, ts, ts)
}

// conversationsHistory answers conversations.history (or .replies, a
// thread) with a channel's acknowledged messages since "oldest", newest
// first, with their metadata when
// include_all_metadata is 1 (as Slack does; one page, which the scenarios
// never outgrow). It meets the same faults as posts.
func (s *chatSink) conversationsHistory(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	fault := s.fault
	s.mu.Unlock()
	if fault != sinkOK {
		w.WriteHeader(http.StatusServiceUnavailable)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	token := cmp.Or(r.PostForm.Get("token"), strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer "))
	if token != slackToken {
		_, _ = w.Write([]byte(`{"ok":false,"error":"invalid_auth"}`))
		return
	}
	oldest, _ := strconv.ParseFloat(r.PostForm.Get("oldest"), 64)
	s.mu.Lock()
	msgs, ok := s.history[r.PostForm.Get("channel")]
	var out []chatMessage
	replies := strings.HasSuffix(r.URL.Path, ".replies")
	for _, m := range slices.Backward(msgs) {
		// History shows top-level messages; replies a thread, with its
		// parent, as Slack answers.
		if replies && m.TS != r.PostForm.Get("ts") && m.ThreadTS != r.PostForm.Get("ts") || !replies && m.ThreadTS != "" {
			continue
		}
		if ts, _ := strconv.ParseFloat(m.TS, 64); ts >= oldest {
			if r.PostForm.Get("include_all_metadata") != "1" {
				m.Metadata = nil
			}
			out = append(out, m)
		}
	}
	s.mu.Unlock()
	if !ok && !strings.HasPrefix(r.PostForm.Get("channel"), "C") {
		_, _ = w.Write([]byte(`{"ok":false,"error":"channel_not_found"}`))
		return
	}
	_ = json.NewEncoder(w).Encode(map[string]any{"ok": true, "messages": out, "has_more": false})
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
