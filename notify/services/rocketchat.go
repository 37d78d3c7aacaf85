package services

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/crowsnest-dev/crowsnest/config/servicetypes"
	"github.com/crowsnest-dev/crowsnest/notify"
	"github.com/crowsnest-dev/crowsnest/notify/services/svc"
)

// rocketchatKind describes service type rocketchat (listed in services.go).
var rocketchatKind = &svc.Kind{
	Name: "rocketchat",
	Type: servicetypes.RocketChat,
	New: func(name string, s any, o svc.Options) (notify.Service, error) {
		r := s.(*servicetypes.RocketChatSettings)
		return &rocketChat{c: svc.NewClient(name, false, o), s: *r, api: strings.TrimSuffix(r.ServerURL, "/") + "/api/v1/"}, nil
	},
}

// rocketChat posts with chat.postMessage after logging in. The login is
// kept and made again when the server refuses it (Argo CD logs in before
// every message).
type rocketChat struct {
	c   *svc.Client
	s   servicetypes.RocketChatSettings
	api string

	mu          sync.Mutex
	token, user string
}

var rocketEmoji = regexp.MustCompile(`^:.+:$`)

// rocketAttachment is a chat.postMessage attachment with the fields Argo
// CD's Rocket.Chat library sends: other keys are dropped, and collapsed,
// a field's short and an action's is_webview and msg_in_chat_window are
// always sent.
type rocketAttachment struct {
	Color             string `json:"color,omitempty"`
	Text              string `json:"text,omitempty"`
	Timestamp         string `json:"ts,omitempty"`
	ThumbURL          string `json:"thumb_url,omitempty"`
	MessageLink       string `json:"message_link,omitempty"`
	Collapsed         bool   `json:"collapsed"`
	AuthorName        string `json:"author_name,omitempty"`
	AuthorLink        string `json:"author_link,omitempty"`
	AuthorIcon        string `json:"author_icon,omitempty"`
	Title             string `json:"title,omitempty"`
	TitleLink         string `json:"title_link,omitempty"`
	TitleLinkDownload string `json:"title_link_download,omitempty"`
	ImageURL          string `json:"image_url,omitempty"`
	AudioURL          string `json:"audio_url,omitempty"`
	VideoURL          string `json:"video_url,omitempty"`
	Actions           []struct {
		Type               string `json:"type,omitempty"`
		Text               string `json:"text,omitempty"`
		URL                string `json:"url,omitempty"`
		ImageURL           string `json:"image_url,omitempty"`
		IsWebView          bool   `json:"is_webview"`
		WebviewHeightRatio string `json:"webview_height_ratio,omitempty"`
		Msg                string `json:"msg,omitempty"`
		MsgInChatWindow    bool   `json:"msg_in_chat_window"`
		MsgProcessingType  string `json:"msg_processing_type,omitempty"`
	} `json:"actions,omitempty"`
	ButtonAlignment string `json:"button_alignment,omitempty"`
	Fields          []struct {
		Short bool   `json:"short"`
		Title string `json:"title,omitempty"`
		Value string `json:"value,omitempty"`
	} `json:"fields,omitempty"`
}

type rocketMessage struct {
	RoomID      string             `json:"roomId,omitempty"`
	Channel     string             `json:"channel,omitempty"`
	Text        string             `json:"text,omitempty"`
	Alias       string             `json:"alias,omitempty"`
	Emoji       string             `json:"emoji,omitempty"`
	Avatar      string             `json:"avatar,omitempty"`
	Attachments []rocketAttachment `json:"attachments,omitempty"`
}

// rocketStatus is the part of Rocket.Chat's answers that says whether it
// worked.
type rocketStatus struct {
	Success bool   `json:"success"`
	Error   string `json:"error"`
	Status  string `json:"status"`
	Message string `json:"message"`
}

func (s rocketStatus) err() error {
	switch {
	case s.Success, s.Error == "" && s.Status == "success":
		return nil
	case s.Error != "":
		return fmt.Errorf("%.300s", s.Error)
	case s.Message != "":
		return fmt.Errorf("status %s: %.300s", s.Status, s.Message)
	}
	return errors.New("answer without success")
}

func (r *rocketChat) Send(ctx context.Context, n notify.Notification, d notify.Destination) (notify.Receipt, error) {
	msg := rocketMessage{Alias: r.s.Alias, Text: n.Message}
	if strings.HasPrefix(d.Recipient, "#") || strings.HasPrefix(d.Recipient, "@") {
		msg.Channel = d.Recipient
	} else {
		msg.RoomID = d.Recipient
	}
	if rocketEmoji.MatchString(r.s.Icon) {
		msg.Emoji = r.s.Icon
	}
	if servicetypes.CheckURL("avatar", r.s.Avatar) == nil {
		msg.Avatar = r.s.Avatar
	}
	var b servicetypes.RocketChatBlock
	if _, err := svc.DecodeBlock(n, "rocketchat", &b); err != nil {
		return notify.Receipt{}, err
	}
	if b.Attachments != "" {
		if err := json.Unmarshal([]byte(b.Attachments), &msg.Attachments); err != nil {
			return notify.Receipt{}, notify.Permanent(fmt.Errorf("%s: rocketchat.attachments: not a JSON array of attachments: %w", r.c.Service, err))
		}
	}
	for try := 0; ; try++ {
		token, user, fresh, err := r.login(ctx)
		if err != nil {
			return notify.Receipt{}, err
		}
		resp, err := r.c.Do(ctx, svc.Request{
			Method: http.MethodPost, URL: r.api + "chat.postMessage", JSON: msg,
			Header: http.Header{"X-Auth-Token": {token}, "X-User-Id": {user}},
		})
		if resp != nil && resp.Status == http.StatusUnauthorized && !fresh && try == 0 {
			r.forget(token) // the kept login expired: log in again once
			continue
		}
		if err != nil {
			return notify.Receipt{}, r.rateLimit(resp, err)
		}
		var answer struct {
			rocketStatus
			Message struct {
				ID string `json:"_id"`
			} `json:"message"`
		}
		_ = resp.Decode(&answer)
		if err := answer.err(); err != nil {
			return notify.Receipt{}, notify.Permanent(fmt.Errorf("%s: chat.postMessage: %w", r.c.Service, err))
		}
		return notify.Receipt{ID: answer.Message.ID}, nil
	}
}

// login returns the kept login or logs in (fresh is then true).
func (r *rocketChat) login(ctx context.Context) (token, user string, fresh bool, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.token != "" {
		return r.token, r.user, false, nil
	}
	form := url.Values{"user": {r.s.Email}, "password": {r.s.Password}}
	resp, err := r.c.Do(ctx, svc.Request{
		Method: http.MethodPost, URL: r.api + "login", Body: []byte(form.Encode()),
		Header: http.Header{"Content-Type": {"application/x-www-form-urlencoded"}},
	})
	if err != nil {
		return "", "", false, r.rateLimit(resp, fmt.Errorf("logging in: %w", err))
	}
	var answer struct {
		rocketStatus
		Data struct {
			Token  string `json:"authToken"`
			UserID string `json:"userId"`
		} `json:"data"`
	}
	_ = resp.Decode(&answer)
	if err := answer.err(); err != nil {
		return "", "", false, notify.Permanent(fmt.Errorf("%s: logging in: %w", r.c.Service, err))
	}
	r.token, r.user = answer.Data.Token, answer.Data.UserID
	return r.token, r.user, true, nil
}

// forget drops a login the server refused.
func (r *rocketChat) forget(token string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.token == token {
		r.token, r.user = "", ""
	}
}

// rateLimit reads Rocket.Chat's 429: its X-RateLimit-Reset is a Unix time
// in milliseconds, which the shared client would read as seconds.
func (r *rocketChat) rateLimit(resp *svc.Response, err error) error {
	if resp == nil || resp.Status != http.StatusTooManyRequests || resp.Header.Get("Retry-After") != "" {
		return err
	}
	ms, perr := strconv.ParseInt(strings.TrimSpace(resp.Header.Get("X-RateLimit-Reset")), 10, 64)
	if perr != nil || ms <= 0 {
		return err
	}
	wait := max(0, time.UnixMilli(ms).Sub(r.c.Now()))
	return fmt.Errorf("%w: %s: 429 Too Many Requests", &notify.RateLimitError{Service: r.c.Service, RetryAfter: wait}, r.c.Service)
}
