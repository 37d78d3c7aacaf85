package gcppubsub

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strings"

	"github.com/crowsnest-dev/crowsnest/config/servicetypes"
	"github.com/crowsnest-dev/crowsnest/notify"
	"github.com/crowsnest-dev/crowsnest/notify/services/svc"
)

// pubsubAPI is Pub/Sub's REST endpoint.
const pubsubAPI = "https://pubsub.googleapis.com"

// Kind describes service type gcppubsub; package services lists it.
var Kind = &svc.Kind{
	Name: "gcppubsub",
	Type: servicetypes.GCPPubSub,
	New: func(name string, s any, o svc.Options) (notify.Service, error) {
		c := *s.(*servicetypes.GCPPubSubSettings)
		cl := svc.NewClient(name, false, o)
		return &gcpPubSub{c: cl, s: c, env: os.Getenv, auth: &googleAuth{c: cl, keyFile: c.KeyFile, env: os.Getenv}}, nil
	},
	DefaultRecipient: true,
}

// gcpPubSub publishes the message to a topic with Pub/Sub's REST API
// (Argo CD uses the gRPC client library; the message is the same): data
// is the message, attributes the block's. PUBSUB_EMULATOR_HOST, as the
// client library honours it, sends to an emulator without credentials.
type gcpPubSub struct {
	c    *svc.Client
	s    servicetypes.GCPPubSubSettings
	env  func(string) string
	auth *googleAuth
}

type pubsubMessage struct {
	Data       string            `json:"data"`
	Attributes map[string]string `json:"attributes,omitempty"`
}

func (g *gcpPubSub) Send(ctx context.Context, n notify.Notification, d notify.Destination) (notify.Receipt, error) {
	var b servicetypes.GCPPubSubBlock
	if _, err := svc.DecodeBlock(n, "gcppubsub", &b); err != nil {
		return notify.Receipt{}, err
	}
	topic := g.s.Topic
	if d.Recipient != "" {
		topic = d.Recipient
	}
	if topic == "" {
		return notify.Receipt{}, notify.Permanent(fmt.Errorf("%s: no topic: set topic or name one as the recipient", g.c.Service))
	}
	if g.s.Project == "" {
		return notify.Receipt{}, notify.Permanent(fmt.Errorf("%s: project: required", g.c.Service))
	}
	base, emulator := pubsubAPI, g.env("PUBSUB_EMULATOR_HOST")
	if emulator != "" {
		base = "http://" + emulator
	}
	u := base + "/v1/projects/" + url.PathEscape(g.s.Project) + "/topics/" + url.PathEscape(topic) + ":publish"
	body := map[string]any{"messages": []pubsubMessage{{
		Data: base64.StdEncoding.EncodeToString([]byte(n.Message)), Attributes: b.Attributes,
	}}}
	var resp *svc.Response
	for try := 0; ; try++ {
		h := http.Header{}
		var token string
		if emulator == "" {
			t, err := g.auth.token(ctx)
			if err != nil {
				return notify.Receipt{}, err
			}
			token = t
			h.Set("Authorization", "Bearer "+token)
		}
		r, err := g.c.Do(ctx, svc.Request{Method: http.MethodPost, URL: u, Header: h, JSON: body})
		if err != nil && r != nil && r.Status == http.StatusUnauthorized && try == 0 && token != "" {
			g.auth.forget(token) // revoked or expired early: one fresh token
			continue
		}
		if err != nil {
			return notify.Receipt{}, err
		}
		resp = r
		break
	}
	var out struct {
		MessageIDs []string `json:"messageIds"`
	}
	if err := resp.Decode(&out); err != nil || len(out.MessageIDs) == 0 {
		return notify.Receipt{}, errors.New(g.c.Service + ": Pub/Sub answered without a message ID")
	}
	return notify.Receipt{ID: out.MessageIDs[0]}, nil
}

// trimKey tells a key's JSON (starts with '{') from a path.
func trimKey(v string) (string, bool) {
	v = strings.TrimSpace(v)
	return v, strings.HasPrefix(v, "{")
}
