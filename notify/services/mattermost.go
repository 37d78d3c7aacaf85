package services

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/crowsnest-dev/crowsnest/config/servicetypes"
	"github.com/crowsnest-dev/crowsnest/notify"
	"github.com/crowsnest-dev/crowsnest/notify/services/svc"
)

// mattermostKind describes service type mattermost (listed in services.go).
var mattermostKind = &svc.Kind{
	Name: "mattermost",
	Type: servicetypes.Mattermost,
	New: func(name string, s any, o svc.Options) (notify.Service, error) {
		m := s.(*servicetypes.MattermostSettings)
		return &mattermost{c: svc.NewClient(name, m.InsecureSkipVerify, o), s: *m}, nil
	},
}

// mattermost posts to a channel (the recipient is its ID) with a
// personal access or bot token, as Argo CD Notifications does.
type mattermost struct {
	c *svc.Client
	s servicetypes.MattermostSettings
}

func (m *mattermost) Send(ctx context.Context, n notify.Notification, d notify.Destination) (notify.Receipt, error) {
	var b servicetypes.MattermostBlock
	if _, err := svc.DecodeBlock(n, "mattermost", &b); err != nil {
		return notify.Receipt{}, err
	}
	attachments := []any{}
	if b.Attachments != "" {
		if err := json.Unmarshal([]byte(b.Attachments), &attachments); err != nil {
			return notify.Receipt{}, notify.Permanent(fmt.Errorf("%s: mattermost.attachments: not a JSON array: %w", m.c.Service, err))
		}
	}
	resp, err := m.c.Do(ctx, svc.Request{
		Method: http.MethodPost,
		URL:    strings.TrimSuffix(m.s.APIURL, "/") + "/api/v4/posts",
		Header: http.Header{"Authorization": {"Bearer " + m.s.Token}},
		JSON: map[string]any{
			"channel_id": d.Recipient,
			"message":    n.Message,
			"props":      map[string]any{"attachments": attachments},
		},
	})
	if err != nil {
		return notify.Receipt{}, err
	}
	var post struct {
		ID string `json:"id"`
	}
	_ = resp.Decode(&post)
	return notify.Receipt{ID: post.ID}, nil
}
