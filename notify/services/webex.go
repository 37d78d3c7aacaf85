package services

import (
	"context"
	"fmt"
	"net/http"
	"regexp"
	"strings"

	"github.com/crowsnest-dev/crowsnest/config/servicetypes"
	"github.com/crowsnest-dev/crowsnest/notify"
	"github.com/crowsnest-dev/crowsnest/notify/services/svc"
)

// DefaultWebexAPI is Webex's public API, Argo CD's default.
const DefaultWebexAPI = "https://webexapis.com"

// webexKind describes service type webex (listed in services.go).
var webexKind = &svc.Kind{
	Name: "webex",
	Type: servicetypes.Webex,
	New: func(name string, s any, o svc.Options) (notify.Service, error) {
		w := s.(*servicetypes.WebexSettings)
		api := strings.TrimSuffix(w.APIURL, "/")
		if api == "" {
			api = DefaultWebexAPI
		}
		return &webex{c: svc.NewClient(name, w.InsecureSkipVerify, o), token: w.Token, url: api + "/v1/messages"}, nil
	},
}

// webex posts the message as Markdown to a person (the recipient is an
// email address) or a room (its ID).
type webex struct {
	c          *svc.Client
	token, url string
}

// webexEmail tells a person's email from a room ID, as Argo CD does.
var webexEmail = regexp.MustCompile(`^\S+@\S+\.\S+$`)

func (w *webex) Send(ctx context.Context, n notify.Notification, d notify.Destination) (notify.Receipt, error) {
	msg := map[string]string{}
	if webexEmail.MatchString(d.Recipient) {
		msg["toPersonEmail"] = d.Recipient
	} else if d.Recipient != "" {
		msg["roomId"] = d.Recipient
	}
	if n.Message != "" {
		msg["markdown"] = n.Message
	}
	resp, err := w.c.Do(ctx, svc.Request{
		Method: http.MethodPost, URL: w.url, JSON: msg,
		Header: http.Header{"Authorization": {"Bearer " + w.token}},
	})
	if err != nil {
		return notify.Receipt{}, err
	}
	// Argo CD takes only 200 as success; another 2xx may still have
	// posted the message, so it is not sent again.
	if resp.Status != http.StatusOK {
		return notify.Receipt{}, notify.Permanent(fmt.Errorf("%s: messages answered %d, not 200", w.c.Service, resp.Status))
	}
	var answer struct {
		ID string `json:"id"`
	}
	_ = resp.Decode(&answer)
	return notify.Receipt{ID: answer.ID}, nil
}
