package teams

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

// Kind describes service type teams; package services lists it.
var Kind = webhookKind(servicetypes.Teams, func(w webhooks) notify.Service { return &connector{w} })

// webhookKind is the Kind of a Teams type t: the sender newSender makes
// of its settings' recipient → webhook map.
func webhookKind(t *servicetypes.Type, newSender func(webhooks) notify.Service) *svc.Kind {
	return &svc.Kind{
		Name: t.Name,
		Type: t,
		New: func(name string, s any, o svc.Options) (notify.Service, error) {
			ts := s.(*servicetypes.TeamsSettings)
			return newSender(webhooks{c: svc.NewClient(name, ts.InsecureSkipVerify, o), urls: ts.RecipientURLs}), nil
		},
	}
}

// webhooks are a Teams service's client and its webhook URL per
// recipient.
type webhooks struct {
	c    *svc.Client
	urls map[string]string
}

// url is the webhook of d's recipient, or a permanent error naming the
// recipient.
func (w webhooks) url(d notify.Destination) (string, error) {
	return svc.RecipientURL(w.c, "recipientUrls", w.urls, d)
}

// post sends a card (JSON) to the webhook u.
func (w webhooks) post(ctx context.Context, u string, body []byte) (*svc.Response, error) {
	return w.c.Do(ctx, svc.Request{
		Method: http.MethodPost, URL: u, Body: body,
		Header: http.Header{"Content-Type": {"application/json"}},
	})
}

// parseObjects reads a block field holding a JSON array of objects into
// out (nothing when the field is empty); key names the field in the error
// ("teams.facts").
func parseObjects(key, val string, out *[]map[string]any) error {
	if val == "" {
		return nil
	}
	if err := json.Unmarshal([]byte(val), out); err != nil {
		return fmt.Errorf("%s: not a JSON array of objects: %w", key, err)
	}
	return nil
}

// connector posts an Office 365 connector message card to a channel's
// incoming webhook, as Argo CD Notifications does.
type connector struct{ webhooks }

// messageCard is the message card Argo CD Notifications sends (its
// "context" key, without "@", included).
type messageCard struct {
	Type            string           `json:"@type"`
	Context         string           `json:"context"`
	Title           string           `json:"title"`
	Summary         string           `json:"summary"`
	Text            string           `json:"text"`
	ThemeColor      string           `json:"themeColor,omitempty"`
	PotentialAction []map[string]any `json:"potentialAction,omitempty"`
	Sections        []map[string]any `json:"sections,omitempty"`
}

func (t *connector) Send(ctx context.Context, n notify.Notification, d notify.Destination) (notify.Receipt, error) {
	u, err := t.url(d)
	if err != nil {
		return notify.Receipt{}, err
	}
	var b servicetypes.TeamsBlock
	if _, err := svc.DecodeBlock(n, "teams", &b); err != nil {
		return notify.Receipt{}, err
	}
	body, err := teamsBody(n.Message, &b)
	if err != nil {
		return notify.Receipt{}, notify.Permanent(fmt.Errorf("%s: %w", t.c.Service, err))
	}
	resp, err := t.post(ctx, u, body)
	if err != nil {
		return notify.Receipt{}, err
	}
	return notify.Receipt{}, teamsAnswer(t.c.Service, resp)
}

// teamsBody is the request body: the block's template as is, or a
// message card from its fields (the message as text when it has none).
func teamsBody(message string, b *servicetypes.TeamsBlock) ([]byte, error) {
	if b.Template != "" {
		return []byte(b.Template), nil
	}
	card := messageCard{
		Type: "MessageCard", Context: "https://schema.org/extensions",
		Title: b.Title, Summary: b.Summary, Text: message, ThemeColor: b.ThemeColor,
	}
	if b.Text != "" {
		card.Text = b.Text
	}
	var facts []map[string]any
	if err := parseObjects("teams.sections", b.Sections, &card.Sections); err != nil {
		return nil, err
	}
	if err := parseObjects("teams.facts", b.Facts, &facts); err != nil {
		return nil, err
	}
	if b.Facts != "" {
		card.Sections = append(card.Sections, map[string]any{"facts": facts})
	}
	if err := parseObjects("teams.potentialAction", b.PotentialAction, &card.PotentialAction); err != nil {
		return nil, err
	}
	return json.Marshal(card)
}

// teamsAnswer applies Argo CD Notifications' rule: a connector webhook
// that posted the card answers "1"; anything else is a failure, even
// with status 200 (Teams reports its own throttling that way: "...
// returned HTTP error 429 ..."), which is retried. A 2xx answer without
// "1" and without an error (a Workflows URL answers 202 and nothing) may
// have posted the card, so it is not sent again: it is dead-lettered with
// a hint.
func teamsAnswer(service string, resp *svc.Response) error {
	body := strings.TrimSpace(string(resp.Body))
	if body == "1" {
		return nil
	}
	snippet := body
	if len(snippet) > 512 {
		snippet = snippet[:512] + "..."
	}
	switch {
	case strings.Contains(body, "429") || strings.Contains(body, "HTTP error 5"):
		return fmt.Errorf("%s: webhook answered %d: %s", service, resp.Status, snippet)
	case body == "":
		return notify.Permanent(fmt.Errorf("%s: webhook answered %d without Teams' \"1\" (a Workflows URL wants service.teams-workflows)", service, resp.Status))
	}
	return notify.Permanent(fmt.Errorf("%s: webhook answered %d: %s", service, resp.Status, snippet))
}
