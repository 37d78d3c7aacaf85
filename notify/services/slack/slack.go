// Package slack is crowsnest's Slack sender (service type slack), on
// slack-go: chat.postMessage with blocks and attachments, threads and
// delivery policies by grouping key (kept in a notify.ThreadStore), the
// delivery ID as message metadata, and after a crash a look through the
// channel's history before a message is posted again (Sender.Sent). Its
// settings are config.SlackService; Kind is how package services builds
// it.
package slack

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

	slackapi "github.com/slack-go/slack"

	"github.com/crowsnest-dev/crowsnest/config"
	"github.com/crowsnest-dev/crowsnest/internal/backoff"
	"github.com/crowsnest-dev/crowsnest/notify"
	"github.com/crowsnest-dev/crowsnest/notify/services/svc"
)

// DefaultTimeout bounds one Slack API call; chat.postMessage answers
// in well under a second when Slack is healthy.
const DefaultTimeout = 15 * time.Second

// Sender posts notifications with a bot token through Slack's Web API.
type Sender struct {
	name     string
	client   *slackapi.Client
	http     *http.Client
	threads  notify.ThreadStore
	username string
	icon     string
	apiURL   string
	timeout  time.Duration
	// channels caches the channel IDs learned from posts, by recipient,
	// once saved in the thread store.
	channels sync.Map
	// scans holds the latest scan of each conversation (*scanEntry), by
	// "channel|thread".
	scans sync.Map
}

// MetadataEvent is the event_type of the metadata crowsnest attaches
// to every message it posts: the payload's "delivery" is the delivery ID
// and "redelivery" how many times it was redelivered by hand. After a
// crash the outbox looks for it (conversations.history or .replies, which
// need the channels:history or groups:history scope) before posting a
// message again.
const MetadataEvent = "crowsnest_delivery"

// confirmPages bounds the history pages read (200 messages each) when
// looking for a message after a restart; a busier channel's message is
// sent again.
const confirmPages = 5

// maybeSentLookBack is how far back the history is searched for a
// delivery asked for again after a restart (Sending.MaybeSent), whose
// earlier post may predate its record by the whole restart.
const maybeSentLookBack = time.Hour

var _ notify.Confirmer = (*Sender)(nil)

// Kind describes service type slack; package services lists it.
var Kind = &svc.Kind{
	Name: config.ServiceSlack,
	New: func(name string, s any, o svc.Options) (notify.Service, error) {
		return New(name, s.(*config.SlackService), o)
	},
}

// New builds the Slack service called name ("slack", "slack.team") from
// its settings; its token reference must be resolved. o.Threads keeps
// thread timestamps (usually the outbox Store), so grouping keys and
// delivery policies work; without it every message is a new post.
func New(name string, c *config.SlackService, o svc.Options) (*Sender, error) {
	token, err := c.Token.Value()
	if err != nil {
		return nil, fmt.Errorf("token: %w", err)
	}
	if token == "" {
		return nil, fmt.Errorf("slack %s: empty token", name)
	}
	s := &Sender{name: name, threads: o.Threads, username: c.Username, icon: c.Icon, timeout: cmp.Or(c.Timeout.Duration, DefaultTimeout)}
	if c.APIURL != "" {
		if !strings.HasPrefix(c.APIURL, "http://") && !strings.HasPrefix(c.APIURL, "https://") {
			return nil, fmt.Errorf("slack %s: api URL must be http(s)", name)
		}
		s.apiURL = strings.TrimSuffix(c.APIURL, "/") + "/"
	}
	s.http = &http.Client{Timeout: s.timeout, Transport: o.Transport}
	if o.Transport == nil && (c.InsecureSkipVerify || o.RootCAs != nil) {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		// InsecureSkipVerify is the operator's opt-in, for a
		// Slack-compatible server with a self-signed certificate.
		tr.TLSClientConfig = &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: o.RootCAs, InsecureSkipVerify: c.InsecureSkipVerify}
		s.http.Transport = tr
	}
	copts := []slackapi.Option{slackapi.OptionHTTPClient(s.http)}
	if s.apiURL != "" {
		copts = append(copts, slackapi.OptionAPIURL(s.apiURL))
	}
	s.client = slackapi.New(token, copts...)
	return s, nil
}

// Close releases idle connections.
func (s *Sender) Close() error {
	s.http.CloseIdleConnections()
	return nil
}

// Send posts n to the channel d.Recipient. With a grouping key the first
// message starts a thread; later ones reply in it (Post, optionally
// broadcast) or update it (PostAndUpdate, Update).
func (s *Sender) Send(ctx context.Context, n notify.Notification, d notify.Destination) (notify.Receipt, error) {
	if d.Recipient == "" {
		return notify.Receipt{}, notify.Permanent(fmt.Errorf("slack %s: no channel", s.name))
	}
	var st notify.SlackTemplate
	if n.Slack != nil {
		st = *n.Slack
	}
	opts, err := s.msgOptions(ctx, n.Message, st)
	if err != nil {
		return notify.Receipt{}, err
	}
	policy := st.DeliveryPolicy
	if policy == "" {
		policy = notify.PolicyPost
	}
	if st.GroupingKey == "" || s.threads == nil {
		if policy == notify.PolicyUpdate {
			return notify.Receipt{Skipped: true, Detail: "update policy without a grouping key"}, nil
		}
		_, ts, err := s.post(ctx, d.Recipient, opts)
		return notify.Receipt{ID: ts}, err
	}
	return s.sendGrouped(ctx, d.Recipient, st, policy, opts)
}

// msgOptions builds the message: text, sender name and icon, the delivery
// ID as metadata (which Sent looks for), attachments and blocks. Broken
// attachments or blocks JSON is a permanent error.
func (s *Sender) msgOptions(ctx context.Context, text string, st notify.SlackTemplate) ([]slackapi.MsgOption, error) {
	opts := []slackapi.MsgOption{slackapi.MsgOptionText(text, false)}
	if s.username != "" {
		opts = append(opts, slackapi.MsgOptionUsername(s.username))
	}
	switch {
	case strings.HasPrefix(s.icon, ":"):
		opts = append(opts, slackapi.MsgOptionIconEmoji(s.icon))
	case s.icon != "":
		opts = append(opts, slackapi.MsgOptionIconURL(s.icon))
	}
	if id := notify.DeliveryIDFrom(ctx); id != "" {
		opts = append(opts, slackapi.MsgOptionMetadata(slackapi.SlackMetadata{
			EventType:    MetadataEvent,
			EventPayload: map[string]any{"delivery": id, "redelivery": notify.RedeliveryFrom(ctx)},
		}))
	}
	if strings.TrimSpace(st.Attachments) != "" {
		var atts []slackapi.Attachment
		if err := json.Unmarshal([]byte(st.Attachments), &atts); err != nil {
			return nil, notify.Permanent(fmt.Errorf("slack %s: attachments: %w", s.name, err))
		}
		opts = append(opts, slackapi.MsgOptionAttachments(atts...))
	}
	if strings.TrimSpace(st.Blocks) != "" {
		var blocks slackapi.Blocks
		if err := json.Unmarshal([]byte(st.Blocks), &blocks); err != nil {
			return nil, notify.Permanent(fmt.Errorf("slack %s: blocks: %w", s.name, err))
		}
		opts = append(opts, slackapi.MsgOptionBlocks(blocks.BlockSet...))
	}
	return opts, nil
}

// sendGrouped sends a message with a grouping key to recipient: the
// group's first message starts its thread; later ones reply in it (Post)
// or update its first message (PostAndUpdate, Update).
func (s *Sender) sendGrouped(ctx context.Context, recipient string, st notify.SlackTemplate, policy notify.DeliveryPolicy, opts []slackapi.MsgOption) (notify.Receipt, error) {
	key := s.threadKey(recipient, st.GroupingKey)
	ref, err := s.threads.Thread(ctx, key)
	if err != nil {
		return notify.Receipt{}, fmt.Errorf("slack %s: reading thread: %w", s.name, err)
	}
	channel, parent, found := strings.Cut(ref, "|")
	if !found || parent == "" {
		if policy == notify.PolicyUpdate {
			return notify.Receipt{Skipped: true, Detail: "no message to update for this grouping key"}, nil
		}
		ch, ts, err := s.post(ctx, recipient, opts)
		if err != nil {
			return notify.Receipt{}, err
		}
		if err := s.threads.SetThread(ctx, key, ch+"|"+ts); err != nil {
			// The message went out; sending it again would be worse than
			// losing the thread.
			return notify.Receipt{ID: ts, Detail: "thread not saved: " + err.Error()}, nil
		}
		return notify.Receipt{ID: ts, Detail: "thread started"}, nil
	}
	if policy == notify.PolicyPost {
		opts = append(opts, slackapi.MsgOptionTS(parent))
		if st.NotifyBroadcast {
			opts = append(opts, slackapi.MsgOptionBroadcast())
		}
		_, ts, err := s.post(ctx, channel, opts)
		return notify.Receipt{ID: ts, Detail: "reply in thread " + parent}, err
	}
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	_, ts, _, err := s.client.UpdateMessageContext(ctx, channel, parent, opts...)
	if err != nil {
		return notify.Receipt{}, s.classify("chat.update", err)
	}
	return notify.Receipt{ID: ts, Detail: "updated"}, nil
}

func (s *Sender) post(ctx context.Context, channel string, opts []slackapi.MsgOption) (ch, ts string, err error) {
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
func (s *Sender) rememberChannel(ctx context.Context, recipient, id string) {
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
func (s *Sender) channelID(ctx context.Context, recipient string) (string, error) {
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

func (s *Sender) channelKey(recipient string) string {
	h := sha256.Sum256([]byte(s.name + "\x00channel\x00" + recipient))
	return "slack-channel-" + hex.EncodeToString(h[:16])
}

// Sent implements Confirmer: it looks for the message of rec, by the
// metadata every post carries, in its channel's history (or its thread's
// replies) since shortly before its record was last saved. An update of a
// grouped message is not looked for: sending it again changes nothing.
func (s *Sender) Sent(ctx context.Context, rec notify.Sending) (notify.Receipt, bool, error) {
	var st notify.SlackTemplate
	if rec.Notification.Slack != nil {
		st = *rec.Notification.Slack
	}
	policy := cmp.Or(st.DeliveryPolicy, notify.PolicyPost)
	channel, parent := "", ""
	if st.GroupingKey != "" && s.threads != nil {
		ref, err := s.threads.Thread(ctx, s.threadKey(rec.Recipient, st.GroupingKey))
		if err != nil {
			return notify.Receipt{}, false, fmt.Errorf("slack %s: reading thread: %w", s.name, err)
		}
		if ch, ts, ok := strings.Cut(ref, "|"); ok && ts != "" {
			if policy != notify.PolicyPost {
				return notify.Receipt{}, false, nil
			}
			channel, parent = ch, ts
		}
	}
	if channel == "" {
		id, err := s.channelID(ctx, rec.Recipient)
		if err != nil || id == "" {
			return notify.Receipt{}, false, err
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
	marks, err := s.scan(ctx, channel, parent, oldest, notify.AttemptedSince(ctx))
	if err != nil {
		return notify.Receipt{}, false, err
	}
	ts, found := marks[deliveryMark(rec.ID, rec.Redeliveries)]
	if !found {
		return notify.Receipt{}, false, nil
	}
	if st.GroupingKey != "" && parent == "" && s.threads != nil {
		// The post started the thread; the crash came before it was
		// saved.
		if err := s.threads.SetThread(ctx, s.threadKey(rec.Recipient, st.GroupingKey), channel+"|"+ts); err != nil {
			// Found all the same: posting it again would be worse than
			// losing the thread.
			return notify.Receipt{ID: ts, Detail: "thread not saved: " + err.Error()}, true, nil //nolint:nilerr // see above
		}
		return notify.Receipt{ID: ts, Detail: "thread started"}, true, nil
	}
	return notify.Receipt{ID: ts}, true, nil
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
func (s *Sender) scan(ctx context.Context, channel, parent string, oldest int64, notBefore time.Time) (map[string]string, error) {
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
		var msgs []slackapi.Message
		var more bool
		var err error
		cctx, cancel := context.WithTimeout(ctx, s.timeout)
		since := fmt.Sprintf("%d.000000", oldest)
		if parent != "" {
			msgs, more, cursor, err = s.client.GetConversationRepliesContext(cctx, &slackapi.GetConversationRepliesParameters{
				ChannelID: channel, Timestamp: parent, Oldest: since, Cursor: cursor, Limit: 200, IncludeAllMetadata: true,
			})
		} else {
			var resp *slackapi.GetConversationHistoryResponse
			resp, err = s.client.GetConversationHistoryContext(cctx, &slackapi.GetConversationHistoryParameters{
				ChannelID: channel, Oldest: since, Cursor: cursor, Limit: 200, IncludeAllMetadata: true,
			})
			if resp != nil {
				msgs, more, cursor = resp.Messages, resp.HasMore, resp.ResponseMetaData.NextCursor
			}
		}
		cancel()
		if err != nil {
			err = s.classify(method, err)
			var rl *notify.RateLimitError
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
func metadataMark(md slackapi.SlackMetadata) (string, bool) {
	if md.EventType != MetadataEvent {
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
func (s *Sender) threadKey(channel, groupingKey string) string {
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

func (s *Sender) classify(method string, err error) error {
	var rl *slackapi.RateLimitedError
	if errors.As(err, &rl) {
		return &notify.RateLimitError{Service: "slack " + s.name, RetryAfter: rl.RetryAfter}
	}
	wrapped := fmt.Errorf("slack %s: %s: %w", s.name, method, notify.CleanURLError(err, s.apiURL))
	var se slackapi.SlackErrorResponse
	if errors.As(err, &se) && permanentSlackErrors[se.Err] {
		return notify.Permanent(wrapped)
	}
	var sc slackapi.StatusCodeError
	if errors.As(err, &sc) && sc.Code >= 400 && sc.Code < 500 && sc.Code != http.StatusRequestTimeout {
		return notify.Permanent(wrapped)
	}
	return wrapped
}
