package testnotify

import (
	"cmp"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/crowsnest-dev/crowsnest/config"
	"github.com/crowsnest-dev/crowsnest/notify"
	"github.com/crowsnest-dev/crowsnest/notify/services/slack"
	"github.com/crowsnest-dev/crowsnest/notify/services/svc"
)

// SlackCall is one Web API request the fake Slack received.
type SlackCall struct {
	Method string // chat.postMessage, chat.update
	Form   url.Values
}

// FakeSlack speaks enough of Slack's Web API for chat.postMessage and
// chat.update: it records form bodies and answers {"ok":true,"ts":...}.
type FakeSlack struct {
	*httptest.Server
	mu          sync.Mutex
	calls       []SlackCall
	next        int
	rateLimited int // answer this many next calls with 429 Retry-After: 1
	errors      map[string]string
	// posted keeps the messages posted, by channel ID, for
	// conversations.history and conversations.replies.
	posted map[string][]slackMessage
	// epoch is the seconds of the timestamps posts get (1700000000 when
	// zero): set it to now where conversations.history's "oldest" matters.
	epoch int64
	// unanswered posts: this many next chat.postMessage calls are posted
	// but get no answer until the caller gives up.
	unanswered int
}

type slackMessage struct {
	TS       string          `json:"ts"`
	ThreadTS string          `json:"thread_ts,omitempty"`
	Text     string          `json:"text"`
	Metadata json.RawMessage `json:"metadata,omitempty"`
}

// NewFakeSlack starts a fake Slack until the test ends.
func NewFakeSlack(t *testing.T) *FakeSlack {
	t.Helper()
	f := &FakeSlack{errors: map[string]string{}, posted: map[string][]slackMessage{}}
	f.Server = httptest.NewServer(f)
	t.Cleanup(f.Close)
	return f
}

// NewFakeSlackTLS starts a fake Slack behind TLS with a self-signed
// certificate until the test ends.
func NewFakeSlackTLS(t *testing.T) *FakeSlack {
	t.Helper()
	f := &FakeSlack{errors: map[string]string{}, posted: map[string][]slackMessage{}}
	f.Server = httptest.NewTLSServer(f)
	t.Cleanup(f.Close)
	return f
}

// FailChannel makes every call about channel answer {"ok":false} with
// the Slack error code e.
func (f *FakeSlack) FailChannel(channel, e string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.errors[channel] = e
}

// RateLimitNext answers the next n calls with 429 Retry-After: 1.
func (f *FakeSlack) RateLimitNext(n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.rateLimited = n
}

// LeaveUnanswered posts the next n chat.postMessage calls but answers
// none of them until the caller gives up.
func (f *FakeSlack) LeaveUnanswered(n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.unanswered = n
}

// SetEpoch makes the timestamps of the next posts start at sec (Unix
// seconds), for tests where conversations.history's "oldest" matters.
func (f *FakeSlack) SetEpoch(sec int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.epoch = sec
}

// ServeHTTP answers one Web API call.
func (f *FakeSlack) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	method := strings.TrimPrefix(r.URL.Path, "/api/")
	if err := r.ParseForm(); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.rateLimited > 0 {
		f.rateLimited--
		f.calls = append(f.calls, SlackCall{Method: method + " (429)", Form: r.PostForm})
		w.Header().Set("Retry-After", "1")
		w.WriteHeader(http.StatusTooManyRequests)
		return
	}
	f.calls = append(f.calls, SlackCall{Method: method, Form: r.PostForm})
	w.Header().Set("Content-Type", "application/json")
	if e := f.errors[r.PostForm.Get("channel")]; e != "" {
		_, _ = fmt.Fprintf(w, `{"ok":false,"error":%q}`, e)
		return
	}
	if method == "conversations.history" || method == "conversations.replies" {
		f.history(w, r.Form, method == "conversations.replies")
		return
	}
	ts := r.PostForm.Get("ts")
	channel := r.PostForm.Get("channel")
	if strings.HasPrefix(channel, "#") {
		channel = "C" + strings.ToUpper(strings.TrimPrefix(channel, "#"))
	}
	if method == "chat.postMessage" {
		f.next++
		ts = fmt.Sprintf("%d.%06d", cmp.Or(f.epoch, 1700000000), f.next)
		m := slackMessage{TS: ts, ThreadTS: r.PostForm.Get("thread_ts"), Text: r.PostForm.Get("text")}
		if md := r.PostForm.Get("metadata"); md != "" {
			m.Metadata = json.RawMessage(md)
		}
		if f.posted == nil {
			f.posted = map[string][]slackMessage{}
		}
		f.posted[channel] = append(f.posted[channel], m)
		if f.unanswered > 0 {
			f.unanswered--
			f.mu.Unlock()
			<-r.Context().Done()
			f.mu.Lock()
			return
		}
	}
	_ = json.NewEncoder(w).Encode(map[string]any{"ok": true, "channel": channel, "ts": ts,
		"message": map[string]any{"text": r.PostForm.Get("text"), "ts": ts}})
}

// history answers conversations.history (top-level messages) and
// conversations.replies (a thread's replies) of a channel ID since
// "oldest", newest first, "limit" per page, with metadata only when
// include_all_metadata is 1. f.mu is held.
func (f *FakeSlack) history(w http.ResponseWriter, form url.Values, replies bool) {
	channel := form.Get("channel")
	if !strings.HasPrefix(channel, "C") {
		_, _ = w.Write([]byte(`{"ok":false,"error":"channel_not_found"}`))
		return
	}
	oldest, _ := strconv.ParseFloat(form.Get("oldest"), 64)
	var out []slackMessage
	for _, m := range slices.Backward(f.posted[channel]) {
		if ts, _ := strconv.ParseFloat(m.TS, 64); ts < oldest {
			continue
		}
		// Replies come with their parent, as Slack answers.
		inThread := m.ThreadTS == form.Get("ts") || m.TS == form.Get("ts")
		if (replies && !inThread) || (!replies && m.ThreadTS != "") {
			continue
		}
		if form.Get("include_all_metadata") != "1" {
			m.Metadata = nil
		}
		out = append(out, m)
	}
	start, _ := strconv.Atoi(form.Get("cursor"))
	limit, _ := strconv.Atoi(form.Get("limit"))
	if limit <= 0 {
		limit = 100
	}
	end := min(start+limit, len(out))
	next := ""
	if end < len(out) {
		next = strconv.Itoa(end)
	}
	_ = json.NewEncoder(w).Encode(map[string]any{"ok": true, "messages": out[min(start, end):end],
		"has_more": next != "", "response_metadata": map[string]any{"next_cursor": next}})
}

// Calls returns the calls received so far, oldest first.
func (f *FakeSlack) Calls() []SlackCall {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]SlackCall(nil), f.calls...)
}

// CountCalls returns how many calls of method were received.
func (f *FakeSlack) CountCalls(method string) int {
	n := 0
	for _, c := range f.Calls() {
		if c.Method == method {
			n++
		}
	}
	return n
}

// SlackToken is the bot token of Service's senders: tests look for it in
// errors and logs.
const SlackToken = "xoxb-secret-bot-token"

// Config is the settings of Service's senders: f's API, SlackToken and
// a 5 s timeout.
func (f *FakeSlack) Config() *config.SlackService {
	return &config.SlackService{Token: config.InlineSecret(SlackToken), APIURL: f.APIURL(), Timeout: config.Duration{Duration: 5 * time.Second}}
}

// Service returns a Slack sender "slack" built from Config, changed by
// edit when given, keeping threads in threads (nil: none); it is closed
// when the test ends.
func (f *FakeSlack) Service(t *testing.T, threads notify.ThreadStore, edit ...func(*config.SlackService)) *slack.Sender {
	t.Helper()
	c := f.Config()
	for _, e := range edit {
		e(c)
	}
	sl, err := slack.New("slack", c, svc.Options{Threads: threads})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sl.Close() })
	return sl
}

// APIURL is the base URL of the fake's Web API (config.SlackService.APIURL).
func (f *FakeSlack) APIURL() string { return f.URL + "/api/" }
