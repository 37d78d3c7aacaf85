package teams

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/crowsnest-dev/crowsnest/notify"
	"github.com/crowsnest-dev/crowsnest/notify/services/svc"
)

// Settings are the keys of `service.teams`: one incoming webhook URL
// per recipient name (`subscribe.on-deployed.teams: channelName`).
type Settings struct {
	RecipientURLs      map[string]string `yaml:"recipientUrls" json:"recipientUrls,omitempty"`
	InsecureSkipVerify bool              `yaml:"insecureSkipVerify" json:"insecureSkipVerify,omitempty"`
}

// Block is a template's `teams:` block. Facts, Sections and
// PotentialAction are JSON arrays; Template, when set, is the whole
// request body and the other fields are not read.
type Block struct {
	Template        string `yaml:"template" json:"template,omitempty"`
	Title           string `yaml:"title" json:"title,omitempty"`
	Summary         string `yaml:"summary" json:"summary,omitempty"`
	Text            string `yaml:"text" json:"text,omitempty"`
	ThemeColor      string `yaml:"themeColor" json:"themeColor,omitempty"`
	Facts           string `yaml:"facts" json:"facts,omitempty"`
	Sections        string `yaml:"sections" json:"sections,omitempty"`
	PotentialAction string `yaml:"potentialAction" json:"potentialAction,omitempty"`
}

// Kind describes service type teams; package services lists it.
var Kind = webhookKind("teams", func() any { return &Block{} }, func(w webhooks) notify.Service { return &connector{w} })

// webhookKind is the Kind of a Teams type typ: Settings' recipient →
// webhook map, checked when read, and the sender newSender makes of it.
func webhookKind(typ string, block func() any, newSender func(webhooks) notify.Service) *svc.Kind {
	return &svc.Kind{
		Type:     typ,
		Settings: func() any { return &Settings{} },
		Block:    block,
		Validate: func(s any) error {
			return svc.CheckRecipientURLs("recipientUrls", s.(*Settings).RecipientURLs)
		},
		New: func(name string, s any, o svc.Options) (notify.Service, error) {
			t := s.(*Settings)
			return newSender(webhooks{c: svc.NewClient(name, t.InsecureSkipVerify, o), urls: t.RecipientURLs}), nil
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
	var b Block
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
func teamsBody(message string, b *Block) ([]byte, error) {
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
