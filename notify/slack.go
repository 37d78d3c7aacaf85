package notify

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/slack-go/slack"
)

// DefaultSlackTimeout bounds one Slack API call; chat.postMessage answers
// in well under a second when Slack is healthy.
const DefaultSlackTimeout = 15 * time.Second

// ThreadStore remembers, per grouping key, the Slack message that started
// a thread, so replies and updates find it after a restart.
type ThreadStore interface {
	// Thread returns the reference saved under key, "" when none.
	Thread(ctx context.Context, key string) (string, error)
	SetThread(ctx context.Context, key, ref string) error
}

// Slack posts notifications with a bot token through Slack's Web API.
type Slack struct {
	name     string
	client   *slack.Client
	http     *http.Client
	threads  ThreadStore
	username string
	icon     string
	apiURL   string
	timeout  time.Duration
	tls      *tls.Config
}

var _ Service = (*Slack)(nil)

// SlackOption configures a Slack service.
type SlackOption func(*Slack) error

// NewSlack builds the Slack service called name ("slack", "slack.team")
// that posts with the bot token.
func NewSlack(name, token string, opts ...SlackOption) (*Slack, error) {
	if token == "" {
		return nil, fmt.Errorf("slack %s: empty token", name)
	}
	s := &Slack{name: name, timeout: DefaultSlackTimeout}
	for _, opt := range opts {
		if err := opt(s); err != nil {
			return nil, fmt.Errorf("slack %s: %w", name, err)
		}
	}
	s.http = &http.Client{Timeout: s.timeout}
	if s.tls != nil {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.TLSClientConfig = s.tls
		s.http.Transport = tr
	}
	copts := []slack.Option{slack.OptionHTTPClient(s.http)}
	if s.apiURL != "" {
		copts = append(copts, slack.OptionAPIURL(s.apiURL))
	}
	s.client = slack.New(token, copts...)
	return s, nil
}

// WithSlackAPIURL sends API calls to u ("https://slack.com/api/" by
// default), for Slack-compatible servers and tests.
func WithSlackAPIURL(u string) SlackOption {
	return func(s *Slack) error {
		if !strings.HasPrefix(u, "http://") && !strings.HasPrefix(u, "https://") {
			return errors.New("api URL must be http(s)")
		}
		s.apiURL = strings.TrimSuffix(u, "/") + "/"
		return nil
	}
}

// WithSlackTLS skips TLS verification of the API server when
// insecureSkipVerify is set (a Slack-compatible server with a self-signed
// certificate); without it the system roots verify the server.
func WithSlackTLS(insecureSkipVerify bool) SlackOption {
	return func(s *Slack) error {
		if insecureSkipVerify {
			s.tls = &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: true} //nolint:gosec // opt-in by config
		}
		return nil
	}
}

// WithSlackUsername posts as username (needs chat:write.customize).
func WithSlackUsername(name string) SlackOption {
	return func(s *Slack) error { s.username = name; return nil }
}

// WithSlackIcon sets the poster's icon: an :emoji: or an image URL.
func WithSlackIcon(icon string) SlackOption {
	return func(s *Slack) error { s.icon = icon; return nil }
}

// WithThreads keeps thread timestamps in ts (usually the outbox Store), so
// grouping keys and delivery policies work; without it every message is a
// new post.
func WithThreads(ts ThreadStore) SlackOption {
	return func(s *Slack) error { s.threads = ts; return nil }
}

// WithSlackTimeout bounds one API call.
func WithSlackTimeout(d time.Duration) SlackOption {
	return func(s *Slack) error {
		if d <= 0 {
			return fmt.Errorf("timeout %s must be positive", d)
		}
		s.timeout = d
		return nil
	}
}

// Close releases idle connections.
func (s *Slack) Close() error {
	s.http.CloseIdleConnections()
	return nil
}

// Send posts n to the channel d.Recipient. With a grouping key the first
// message starts a thread; later ones reply in it (Post, optionally
// broadcast) or update it (PostAndUpdate, Update).
func (s *Slack) Send(ctx context.Context, n Notification, d Destination) (Receipt, error) {
	if d.Recipient == "" {
		return Receipt{}, Permanent(fmt.Errorf("slack %s: no channel", s.name))
	}
	opts := []slack.MsgOption{slack.MsgOptionText(n.Message, false)}
	if s.username != "" {
		opts = append(opts, slack.MsgOptionUsername(s.username))
	}
	switch {
	case strings.HasPrefix(s.icon, ":"):
		opts = append(opts, slack.MsgOptionIconEmoji(s.icon))
	case s.icon != "":
		opts = append(opts, slack.MsgOptionIconURL(s.icon))
	}
	var st SlackTemplate
	if n.Slack != nil {
		st = *n.Slack
	}
	if strings.TrimSpace(st.Attachments) != "" {
		var atts []slack.Attachment
		if err := json.Unmarshal([]byte(st.Attachments), &atts); err != nil {
			return Receipt{}, Permanent(fmt.Errorf("slack %s: attachments: %w", s.name, err))
		}
		opts = append(opts, slack.MsgOptionAttachments(atts...))
	}
	if strings.TrimSpace(st.Blocks) != "" {
		var blocks slack.Blocks
		if err := json.Unmarshal([]byte(st.Blocks), &blocks); err != nil {
			return Receipt{}, Permanent(fmt.Errorf("slack %s: blocks: %w", s.name, err))
		}
		opts = append(opts, slack.MsgOptionBlocks(blocks.BlockSet...))
	}
	policy := st.DeliveryPolicy
	if policy == "" {
		policy = PolicyPost
	}
	if st.GroupingKey == "" || s.threads == nil {
		if policy == PolicyUpdate {
			return Receipt{Skipped: true, Detail: "update policy without a grouping key"}, nil
		}
		_, ts, err := s.post(ctx, d.Recipient, opts)
		return Receipt{ID: ts}, err
	}
	key := s.threadKey(d.Recipient, st.GroupingKey)
	ref, err := s.threads.Thread(ctx, key)
	if err != nil {
		return Receipt{}, fmt.Errorf("slack %s: reading thread: %w", s.name, err)
	}
	channel, parent, found := strings.Cut(ref, "|")
	if !found || parent == "" {
		if policy == PolicyUpdate {
			return Receipt{Skipped: true, Detail: "no message to update for this grouping key"}, nil
		}
		ch, ts, err := s.post(ctx, d.Recipient, opts)
		if err != nil {
			return Receipt{}, err
		}
		if err := s.threads.SetThread(ctx, key, ch+"|"+ts); err != nil {
			// The message went out; sending it again would be worse than
			// losing the thread.
			return Receipt{ID: ts, Detail: "thread not saved: " + err.Error()}, nil
		}
		return Receipt{ID: ts, Detail: "thread started"}, nil
	}
	if policy == PolicyPost {
		opts = append(opts, slack.MsgOptionTS(parent))
		if st.NotifyBroadcast {
			opts = append(opts, slack.MsgOptionBroadcast())
		}
		_, ts, err := s.post(ctx, channel, opts)
		return Receipt{ID: ts, Detail: "reply in thread " + parent}, err
	}
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	_, ts, _, err := s.client.UpdateMessageContext(ctx, channel, parent, opts...)
	if err != nil {
		return Receipt{}, s.classify("chat.update", err)
	}
	return Receipt{ID: ts, Detail: "updated"}, nil
}

func (s *Slack) post(ctx context.Context, channel string, opts []slack.MsgOption) (ch, ts string, err error) {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	ch, ts, err = s.client.PostMessageContext(ctx, channel, opts...)
	if err != nil {
		return "", "", s.classify("chat.postMessage", err)
	}
	return ch, ts, nil
}

// threadKey names a thread by service, channel and grouping key, hashed
// so any grouping key is a valid store key.
func (s *Slack) threadKey(channel, groupingKey string) string {
	h := sha256.Sum256([]byte(s.name + "\x00" + channel + "\x00" + groupingKey))
	return "slack-" + hex.EncodeToString(h[:16])
}

// permanentSlackErrors are API errors retrying cannot fix.
var permanentSlackErrors = map[string]bool{
	"channel_not_found": true, "not_in_channel": true, "is_archived": true, "invalid_auth": true,
	"not_authed": true, "account_inactive": true, "token_revoked": true, "missing_scope": true,
	"invalid_blocks": true, "invalid_attachments": true, "msg_too_long": true, "no_text": true,
	"message_not_found": true, "cant_update_message": true, "edit_window_closed": true,
	"invalid_arguments": true, "restricted_action": true, "too_many_attachments": true,
}

func (s *Slack) classify(method string, err error) error {
	var rl *slack.RateLimitedError
	if errors.As(err, &rl) {
		return &RateLimitError{Service: "slack " + s.name, RetryAfter: rl.RetryAfter}
	}
	wrapped := fmt.Errorf("slack %s: %s: %w", s.name, method, cleanURLError(err, s.apiURL))
	var se slack.SlackErrorResponse
	if errors.As(err, &se) && permanentSlackErrors[se.Err] {
		return Permanent(wrapped)
	}
	var sc slack.StatusCodeError
	if errors.As(err, &sc) && sc.Code >= 400 && sc.Code < 500 && sc.Code != http.StatusRequestTimeout {
		return Permanent(wrapped)
	}
	return wrapped
}
