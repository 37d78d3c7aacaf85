package notify

import (
	"cmp"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/slack-go/slack"

	"github.com/crowsnest-dev/crowsnest/internal/backoff"
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
	// channels caches the channel IDs learned from posts, by recipient,
	// once saved in the thread store.
	channels sync.Map
	// scans holds the latest scan of each conversation (*scanEntry), by
	// "channel|thread".
	scans sync.Map
}

// SlackMetadataEvent is the event_type of the metadata crowsnest attaches
// to every message it posts: the payload's "delivery" is the delivery ID
// and "redelivery" how many times it was redelivered by hand. After a
// crash the outbox looks for it (conversations.history or .replies, which
// need the channels:history or groups:history scope) before posting a
// message again.
const SlackMetadataEvent = "crowsnest_delivery"

// confirmPages bounds the history pages read (200 messages each) when
// looking for a message after a restart; a busier channel's message is
// sent again.
const confirmPages = 5

// maybeSentLookBack is how far back the history is searched for a
// delivery asked for again after a restart (Sending.MaybeSent), whose
// earlier post may predate its record by the whole restart.
const maybeSentLookBack = time.Hour

var _ Confirmer = (*Slack)(nil)

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
			s.tls = &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: true} // opt-in by config
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
	var st SlackTemplate
	if n.Slack != nil {
		st = *n.Slack
	}
	opts, err := s.msgOptions(ctx, n.Message, st)
	if err != nil {
		return Receipt{}, err
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
	return s.sendGrouped(ctx, d.Recipient, st, policy, opts)
}

// msgOptions builds the message: text, sender name and icon, the delivery
// ID as metadata (which Sent looks for), attachments and blocks. Broken
// attachments or blocks JSON is a permanent error.
func (s *Slack) msgOptions(ctx context.Context, text string, st SlackTemplate) ([]slack.MsgOption, error) {
	opts := []slack.MsgOption{slack.MsgOptionText(text, false)}
	if s.username != "" {
		opts = append(opts, slack.MsgOptionUsername(s.username))
	}
	switch {
	case strings.HasPrefix(s.icon, ":"):
		opts = append(opts, slack.MsgOptionIconEmoji(s.icon))
	case s.icon != "":
		opts = append(opts, slack.MsgOptionIconURL(s.icon))
	}
	if id := DeliveryIDFrom(ctx); id != "" {
		opts = append(opts, slack.MsgOptionMetadata(slack.SlackMetadata{
			EventType:    SlackMetadataEvent,
			EventPayload: map[string]any{"delivery": id, "redelivery": redeliveryFrom(ctx)},
		}))
	}
	if strings.TrimSpace(st.Attachments) != "" {
		var atts []slack.Attachment
		if err := json.Unmarshal([]byte(st.Attachments), &atts); err != nil {
			return nil, Permanent(fmt.Errorf("slack %s: attachments: %w", s.name, err))
		}
		opts = append(opts, slack.MsgOptionAttachments(atts...))
	}
	if strings.TrimSpace(st.Blocks) != "" {
		var blocks slack.Blocks
		if err := json.Unmarshal([]byte(st.Blocks), &blocks); err != nil {
			return nil, Permanent(fmt.Errorf("slack %s: blocks: %w", s.name, err))
		}
		opts = append(opts, slack.MsgOptionBlocks(blocks.BlockSet...))
	}
	return opts, nil
}

// sendGrouped sends a message with a grouping key to recipient: the
// group's first message starts its thread; later ones reply in it (Post)
// or update its first message (PostAndUpdate, Update).
func (s *Slack) sendGrouped(ctx context.Context, recipient string, st SlackTemplate, policy DeliveryPolicy, opts []slack.MsgOption) (Receipt, error) {
	key := s.threadKey(recipient, st.GroupingKey)
	ref, err := s.threads.Thread(ctx, key)
	if err != nil {
		return Receipt{}, fmt.Errorf("slack %s: reading thread: %w", s.name, err)
	}
	channel, parent, found := strings.Cut(ref, "|")
	if !found || parent == "" {
		if policy == PolicyUpdate {
			return Receipt{Skipped: true, Detail: "no message to update for this grouping key"}, nil
		}
		ch, ts, err := s.post(ctx, recipient, opts)
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
	pctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	ch, ts, err = s.client.PostMessageContext(pctx, channel, opts...)
	if err != nil {
		return "", "", s.classify("chat.postMessage", err)
	}
	s.rememberChannel(ctx, channel, ch)
	return ch, ts, nil
}

// channelIDRE matches Slack conversation IDs (public, private, direct).
var channelIDRE = regexp.MustCompile(`^[CGD][A-Z0-9]{6,}$`)

// rememberChannel saves the ID of a channel posted to by name, once per
// process, so that after a crash its history can be searched
// (conversations.history takes IDs only). A failed save is only logged
// by its absence: the message is then sent again after a crash.
func (s *Slack) rememberChannel(ctx context.Context, recipient, id string) {
	if s.threads == nil || id == "" || recipient == id || channelIDRE.MatchString(recipient) {
		return
	}
	if known, ok := s.channels.Load(recipient); ok && known == id {
		return
	}
	if err := s.threads.SetThread(ctx, s.channelKey(recipient), id); err == nil {
		s.channels.Store(recipient, id)
	}
}

// channelID returns the ID of the channel recipient names, "" when it is
// not known.
func (s *Slack) channelID(ctx context.Context, recipient string) (string, error) {
	if channelIDRE.MatchString(recipient) {
		return recipient, nil
	}
	if id, ok := s.channels.Load(recipient); ok {
		return id.(string), nil
	}
	if s.threads == nil {
		return "", nil
	}
	return s.threads.Thread(ctx, s.channelKey(recipient))
}

func (s *Slack) channelKey(recipient string) string {
	h := sha256.Sum256([]byte(s.name + "\x00channel\x00" + recipient))
	return "slack-channel-" + hex.EncodeToString(h[:16])
}

// Sent implements Confirmer: it looks for the message of rec, by the
// metadata every post carries, in its channel's history (or its thread's
// replies) since shortly before its record was last saved. An update of a
// grouped message is not looked for: sending it again changes nothing.
func (s *Slack) Sent(ctx context.Context, rec Sending) (Receipt, bool, error) {
	var st SlackTemplate
	if rec.Notification.Slack != nil {
		st = *rec.Notification.Slack
	}
	policy := cmp.Or(st.DeliveryPolicy, PolicyPost)
	channel, parent := "", ""
	if st.GroupingKey != "" && s.threads != nil {
		ref, err := s.threads.Thread(ctx, s.threadKey(rec.Recipient, st.GroupingKey))
		if err != nil {
			return Receipt{}, false, fmt.Errorf("slack %s: reading thread: %w", s.name, err)
		}
		if ch, ts, ok := strings.Cut(ref, "|"); ok && ts != "" {
			if policy != PolicyPost {
				return Receipt{}, false, nil
			}
			channel, parent = ch, ts
		}
	}
	if channel == "" {
		id, err := s.channelID(ctx, rec.Recipient)
		if err != nil || id == "" {
			return Receipt{}, false, err
		}
		channel = id
	}
	// Five minutes before the last save covers clocks that disagree. A
	// delivery asked for again after a restart (MaybeSent) was recorded
	// only now, and the earlier process may have posted it before a long
	// restart (a crash loop's backoff, a node lost): an hour back.
	oldest := rec.UpdatedAt.Add(-5 * time.Minute).Unix()
	if rec.MaybeSent {
		oldest = rec.CreatedAt.Add(-maybeSentLookBack).Unix()
	}
	marks, err := s.scan(ctx, channel, parent, oldest, attemptedSince(ctx))
	if err != nil {
		return Receipt{}, false, err
	}
	ts, found := marks[deliveryMark(rec.ID, rec.Redeliveries)]
	if !found {
		return Receipt{}, false, nil
	}
	if st.GroupingKey != "" && parent == "" && s.threads != nil {
		// The post started the thread; the crash came before it was
		// saved.
		if err := s.threads.SetThread(ctx, s.threadKey(rec.Recipient, st.GroupingKey), channel+"|"+ts); err != nil {
			// Found all the same: posting it again would be worse than
			// losing the thread.
			return Receipt{ID: ts, Detail: "thread not saved: " + err.Error()}, true, nil //nolint:nilerr // see above
		}
		return Receipt{ID: ts, Detail: "thread started"}, true, nil
	}
	return Receipt{ID: ts}, true, nil
}

// scanTTL is how long a conversation's scan answers later lookups: the
// deliveries found pending at one start are looked for within moments of
// each other, and one scan per channel (not per message) keeps them under
// Slack's limit for conversations.history (about 50 calls a minute).
const scanTTL = time.Minute

// scanEntry is one conversation's scan: the delivery marks of its
// messages since oldest, with their timestamps.
type scanEntry struct {
	mu      sync.Mutex
	oldest  int64
	fetched time.Time
	marks   map[string]string
}

// scan returns the delivery marks (deliveryMark) in channel, or in the
// thread of parent, since oldest (Unix seconds), reading at most
// confirmPages pages; a scan of the same conversation from no later than
// oldest, less than scanTTL old and made after notBefore, is reused. A
// rate limit is waited out (Retry-After, while ctx allows) up to three
// times.
func (s *Slack) scan(ctx context.Context, channel, parent string, oldest int64, notBefore time.Time) (map[string]string, error) {
	v, _ := s.scans.LoadOrStore(channel+"|"+parent, &scanEntry{})
	e := v.(*scanEntry)
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.marks != nil && e.oldest <= oldest && time.Since(e.fetched) < scanTTL && e.fetched.After(notBefore) {
		return e.marks, nil
	}
	method := "conversations.history"
	if parent != "" {
		method = "conversations.replies"
	}
	fetched := time.Now()
	marks := map[string]string{}
	cursor := ""
	rateWaits := 0
	for page := 0; page < confirmPages; {
		var msgs []slack.Message
		var more bool
		var err error
		cctx, cancel := context.WithTimeout(ctx, s.timeout)
		since := fmt.Sprintf("%d.000000", oldest)
		if parent != "" {
			msgs, more, cursor, err = s.client.GetConversationRepliesContext(cctx, &slack.GetConversationRepliesParameters{
				ChannelID: channel, Timestamp: parent, Oldest: since, Cursor: cursor, Limit: 200, IncludeAllMetadata: true,
			})
		} else {
			var resp *slack.GetConversationHistoryResponse
			resp, err = s.client.GetConversationHistoryContext(cctx, &slack.GetConversationHistoryParameters{
				ChannelID: channel, Oldest: since, Cursor: cursor, Limit: 200, IncludeAllMetadata: true,
			})
			if resp != nil {
				msgs, more, cursor = resp.Messages, resp.HasMore, resp.ResponseMetaData.NextCursor
			}
		}
		cancel()
		if err != nil {
			err = s.classify(method, err)
			var rl *RateLimitError
			if errors.As(err, &rl) && rateWaits < 3 && backoff.Sleep(ctx, max(rl.RetryAfter, time.Second)) == nil {
				rateWaits++
				continue // the same page again
			}
			return nil, err
		}
		page++
		for i := range msgs {
			if mark, ok := metadataMark(msgs[i].Metadata); ok {
				marks[mark] = msgs[i].Timestamp
			}
		}
		if !more || cursor == "" {
			break
		}
	}
	e.oldest, e.fetched, e.marks = oldest, fetched, marks
	return marks, nil
}

// deliveryMark names one message of a delivery: its ID and how many times
// it was redelivered by hand.
func deliveryMark(id string, redelivery int) string { return id + "#" + strconv.Itoa(redelivery) }

// metadataMark reads the delivery mark from a message's metadata.
func metadataMark(md slack.SlackMetadata) (string, bool) {
	if md.EventType != SlackMetadataEvent {
		return "", false
	}
	id, _ := md.EventPayload["delivery"].(string)
	if id == "" {
		return "", false
	}
	var n int
	switch v := md.EventPayload["redelivery"].(type) {
	case float64:
		n = int(v)
	case string:
		n, _ = strconv.Atoi(v)
	}
	return deliveryMark(id, n), true
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
