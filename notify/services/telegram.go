package services

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/crowsnest-dev/crowsnest/config/servicetypes"
	"github.com/crowsnest-dev/crowsnest/notify"
	"github.com/crowsnest-dev/crowsnest/notify/services/svc"
)

// telegramAPI is the Bot API's fixed host, as Argo CD Notifications uses
// it (it has no setting for another; tests redirect svc.Options.Transport).
const telegramAPI = "https://api.telegram.org"

// telegramKind describes service type telegram (listed in services.go).
var telegramKind = &svc.Kind{
	Name: "telegram",
	Type: servicetypes.Telegram,
	New: func(name string, s any, o svc.Options) (notify.Service, error) {
		return &telegram{c: svc.NewClient(name, false, o), token: s.(*servicetypes.TelegramSettings).Token}, nil
	},
}

// telegram sends the message with the Bot API's sendMessage, in Markdown,
// with the parameters Argo CD Notifications' Telegram library sends (it
// also calls getMe before every message; crowsnest does not).
type telegram struct {
	c     *svc.Client
	token string
}

// telegramChat reads a recipient as Argo CD does: "-100123" is a chat ID
// and "-100123|7" a chat and a forum topic (message thread); "name" is the
// channel or group @name. Where Argo CD sends a recipient Telegram cannot
// accept, crowsnest reads it as meant: "12345" (a user's or chat's
// positive ID, which Argo CD sends as @12345) is a chat ID, "@name" is
// @name (not @@name), and "name|7" is a topic of @name.
func telegramChat(recipient string) (chat, thread string, err error) {
	id, topic, hasTopic := strings.Cut(recipient, "|")
	if hasTopic {
		n, err := strconv.Atoi(topic)
		if err != nil {
			return "", "", fmt.Errorf("recipient %q: topic %q is not a number", recipient, topic)
		}
		if n != 0 {
			thread = strconv.Itoa(n)
		}
	}
	if n, err := strconv.ParseInt(id, 10, 64); err == nil {
		return strconv.FormatInt(n, 10), thread, nil
	}
	if strings.HasPrefix(id, "-") {
		return "", "", fmt.Errorf("recipient %q: not a chat ID", recipient)
	}
	name := strings.TrimPrefix(id, "@")
	if name == "" {
		return "", "", errors.New("recipient: want a chat ID or a channel name")
	}
	return "@" + name, thread, nil
}

// telegramAnswer is the Bot API's answer.
type telegramAnswer struct {
	OK          bool   `json:"ok"`
	Description string `json:"description"`
	Result      struct {
		MessageID int64 `json:"message_id"`
	} `json:"result"`
	Parameters struct {
		RetryAfter int `json:"retry_after"`
	} `json:"parameters"`
}

func (t *telegram) Send(ctx context.Context, n notify.Notification, d notify.Destination) (notify.Receipt, error) {
	chat, thread, err := telegramChat(d.Recipient)
	if err != nil {
		return notify.Receipt{}, notify.Permanent(fmt.Errorf("%s: %w", t.c.Service, err))
	}
	// The parameters Argo CD's library sends with every message, empty
	// ones included, so the Bot API gets the same request from both.
	form := url.Values{
		"chat_id":                {chat},
		"parse_mode":             {"Markdown"},
		"business_connection_id": {""},
		"entities":               {"null"},
		"link_preview_options":   {"{}"},
		"reply_parameters":       {`{"message_id":0}`},
	}
	if n.Message != "" {
		form.Set("text", n.Message)
	}
	if thread != "" {
		form.Set("message_thread_id", thread)
	}
	resp, err := t.c.Do(ctx, svc.Request{
		Method: http.MethodPost,
		URL:    telegramAPI + "/bot" + t.token + "/sendMessage",
		Header: http.Header{"Content-Type": {"application/x-www-form-urlencoded"}},
		Body:   []byte(form.Encode()),
	})
	var a telegramAnswer
	if resp != nil {
		_ = resp.Decode(&a)
	}
	if err != nil {
		// The Bot API says how long to wait in its body, not in a header.
		var rl *notify.RateLimitError
		if resp != nil && resp.Status == http.StatusTooManyRequests && a.Parameters.RetryAfter > 0 && !errors.As(err, &rl) {
			return notify.Receipt{}, fmt.Errorf("%w: %w", &notify.RateLimitError{Service: t.c.Service, RetryAfter: time.Duration(a.Parameters.RetryAfter) * time.Second}, err)
		}
		return notify.Receipt{}, err
	}
	if !a.OK {
		return notify.Receipt{}, notify.Permanent(fmt.Errorf("%s: sendMessage answered %d without ok: %.200s", t.c.Service, resp.Status, a.Description))
	}
	return notify.Receipt{ID: strconv.FormatInt(a.Result.MessageID, 10)}, nil
}
