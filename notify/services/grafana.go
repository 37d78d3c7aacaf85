package services

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"path"
	"strings"

	"github.com/crowsnest-dev/crowsnest/config/servicetypes"
	"github.com/crowsnest-dev/crowsnest/notify"
	"github.com/crowsnest-dev/crowsnest/notify/services/svc"
)

// grafanaKind describes service type grafana (listed in services.go).
var grafanaKind = &svc.Kind{
	Name: "grafana",
	Type: servicetypes.Grafana,
	New: func(name string, s any, o svc.Options) (notify.Service, error) {
		g := s.(*servicetypes.GrafanaSettings)
		u, err := url.Parse(g.APIURL)
		if err != nil {
			return nil, errors.New("apiUrl: not a URL")
		}
		u.Path = path.Join(u.Path, "annotations")
		return &grafana{c: svc.NewClient(name, g.InsecureSkipVerify, o), key: g.APIKey, url: u.String()}, nil
	},
	DefaultRecipient: true,
}

// grafana adds an annotation with the message as text and the recipient's
// "|"-separated tags, as Argo CD Notifications does.
type grafana struct {
	c   *svc.Client
	key string
	url string
}

type grafanaAnnotation struct {
	Time     int64    `json:"time"` // Unix milliseconds, whole seconds as Argo CD sends
	IsRegion bool     `json:"isRegion"`
	Tags     []string `json:"tags"`
	Text     string   `json:"text"`
}

func (g *grafana) Send(ctx context.Context, n notify.Notification, d notify.Destination) (notify.Receipt, error) {
	resp, err := g.c.Do(ctx, svc.Request{
		Method: http.MethodPost,
		URL:    g.url,
		Header: http.Header{"Authorization": {"Bearer " + g.key}},
		JSON: grafanaAnnotation{
			Time: g.c.Now().Unix() * 1000, Tags: strings.Split(d.Recipient, "|"), Text: n.Message,
		},
	})
	if err != nil {
		return notify.Receipt{}, err
	}
	var added struct {
		ID int64 `json:"id"`
	}
	if resp.Decode(&added) == nil && added.ID != 0 {
		return notify.Receipt{ID: fmt.Sprint(added.ID)}, nil
	}
	return notify.Receipt{}, nil
}
