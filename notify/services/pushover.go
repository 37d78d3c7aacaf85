package services

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/crowsnest-dev/crowsnest/config/servicetypes"
	"github.com/crowsnest-dev/crowsnest/notify"
	"github.com/crowsnest-dev/crowsnest/notify/services/svc"
)

// pushoverAPI is Pushover's message endpoint, fixed as in Argo CD (tests
// reach a local server through svc.Options.Transport).
const pushoverAPI = "https://api.pushover.net/1/messages.json"

// pushoverMaxMessage is Pushover's limit on a message, in characters;
// Argo CD's client refuses longer ones before sending.
const pushoverMaxMessage = 1024

// pushoverKey is the shape of application tokens and user or group keys.
var pushoverKey = regexp.MustCompile(`^[A-Za-z0-9]{30}$`)

// pushoverKind describes service type pushover (listed in services.go).
var pushoverKind = &svc.Kind{
	Name: "pushover",
	Type: servicetypes.Pushover,
	New: func(name string, s any, o svc.Options) (notify.Service, error) {
		return &pushover{c: svc.NewClient(name, false, o), s: *s.(*servicetypes.PushoverSettings)}, nil
	},
}

// pushover sends the message to the user or group key named by the
// recipient, as Argo CD Notifications does.
type pushover struct {
	c *svc.Client
	s servicetypes.PushoverSettings
}

func (p *pushover) Send(ctx context.Context, n notify.Notification, d notify.Destination) (notify.Receipt, error) {
	switch {
	case !pushoverKey.MatchString(p.s.Token):
		return notify.Receipt{}, notify.Permanent(fmt.Errorf("%s: token: want 30 letters or digits", p.c.Service))
	case !pushoverKey.MatchString(d.Recipient):
		return notify.Receipt{}, notify.Permanent(fmt.Errorf("%s: recipient: want a user or group key of 30 letters or digits", p.c.Service))
	case n.Message == "":
		return notify.Receipt{}, notify.Permanent(fmt.Errorf("%s: the message is empty", p.c.Service))
	case utf8.RuneCountInString(n.Message) > pushoverMaxMessage:
		return notify.Receipt{}, notify.Permanent(fmt.Errorf("%s: the message is longer than Pushover's %d characters", p.c.Service, pushoverMaxMessage))
	}
	form := url.Values{"token": {p.s.Token}, "user": {d.Recipient}, "message": {n.Message}, "priority": {"0"}}
	resp, err := p.c.Do(ctx, svc.Request{
		Method: http.MethodPost,
		URL:    pushoverAPI,
		Header: http.Header{"Content-Type": {"application/x-www-form-urlencoded"}},
		Body:   []byte(form.Encode()),
	})
	if err != nil {
		return notify.Receipt{}, err
	}
	var answer struct {
		Status  int      `json:"status"`
		Request string   `json:"request"`
		Errors  []string `json:"errors"`
	}
	if err := resp.Decode(&answer); err != nil || answer.Status != 1 {
		return notify.Receipt{}, notify.Permanent(fmt.Errorf("%s: Pushover did not accept the message: %s", p.c.Service, strings.Join(answer.Errors, "; ")))
	}
	return notify.Receipt{ID: answer.Request}, nil
}
