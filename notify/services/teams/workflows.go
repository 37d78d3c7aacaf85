package teams

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"strings"

	"github.com/crowsnest-dev/crowsnest/config/servicetypes"
	"github.com/crowsnest-dev/crowsnest/notify"
	"github.com/crowsnest-dev/crowsnest/notify/services/svc"
)

// WorkflowsKind describes service type teams-workflows; package services
// lists it.
var WorkflowsKind = webhookKind(servicetypes.TeamsWorkflows, func(w webhooks) notify.Service { return &workflows{w} })

// workflows posts an adaptive card to a Teams Workflows webhook.
type workflows struct{ webhooks }

// workflowsURL matches the hosts and paths of Workflows webhooks, as Argo
// CD Notifications checks them before sending.
var workflowsURL = regexp.MustCompile(`(?i)(api\.(powerautomate|powerplatform)\.com|flow\.microsoft\.com|webhook\.office\.com/workflows|/powerautomate/)`)

// checkWorkflowsURL refuses what Argo CD refuses: a URL that is not a
// Workflows webhook, or plain http to anything but the local host.
func checkWorkflowsURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return errors.New("not a URL with a host")
	}
	h := u.Hostname()
	local := h == "localhost" || strings.HasPrefix(h, "127.")
	if u.Scheme != "https" && (!local || u.Scheme != "http") {
		return errors.New("want https (http only to localhost)")
	}
	if !workflowsURL.MatchString(raw) {
		return errors.New("not a Teams Workflows (Power Automate) URL: want api.powerautomate.com, api.powerplatform.com, flow.microsoft.com, webhook.office.com/workflows or a /powerautomate/ path")
	}
	return nil
}

func (t *workflows) Send(ctx context.Context, n notify.Notification, d notify.Destination) (notify.Receipt, error) {
	u, err := t.url(d)
	if err != nil {
		return notify.Receipt{}, err
	}
	if err := checkWorkflowsURL(u); err != nil {
		return notify.Receipt{}, notify.Permanent(fmt.Errorf("%s: webhook of recipient %q: %w", t.c.Service, d.Recipient, err))
	}
	var b servicetypes.TeamsWorkflowsBlock
	if _, err := svc.DecodeBlock(n, "teams-workflows", &b); err != nil {
		return notify.Receipt{}, err
	}
	body, err := workflowsBody(n.Message, &b)
	if err != nil {
		return notify.Receipt{}, notify.Permanent(fmt.Errorf("%s: %w", t.c.Service, err))
	}
	_, err = t.post(ctx, u, body)
	return notify.Receipt{}, err
}

type (
	adaptiveCard struct {
		Type    string           `json:"type"`
		Version string           `json:"version"`
		Body    []adaptiveBlock  `json:"body"`
		Actions []adaptiveAction `json:"actions,omitempty"`
	}
	adaptiveBlock struct {
		Type   string         `json:"type"`
		Text   string         `json:"text,omitempty"`
		Size   string         `json:"size,omitempty"`
		Weight string         `json:"weight,omitempty"`
		Color  string         `json:"color,omitempty"`
		Wrap   bool           `json:"wrap,omitempty"`
		Facts  []adaptiveFact `json:"facts,omitempty"`
	}
	adaptiveFact struct {
		Title string `json:"title"`
		Value string `json:"value"`
	}
	adaptiveAction struct {
		Type  string `json:"type"`
		Title string `json:"title,omitempty"`
		URL   string `json:"url,omitempty"`
	}
)

// workflowsBody is the Workflows message: one adaptive card attachment,
// the block's own card or one built from its fields.
func workflowsBody(message string, b *servicetypes.TeamsWorkflowsBlock) ([]byte, error) {
	var content json.RawMessage
	if b.AdaptiveCard != "" {
		raw := bytes.TrimSpace([]byte(b.AdaptiveCard))
		if !json.Valid(raw) {
			return nil, errors.New("teams-workflows.adaptiveCard: not JSON")
		}
		content = raw
	} else {
		card, err := buildAdaptiveCard(message, b)
		if err != nil {
			return nil, err
		}
		if content, err = json.Marshal(card); err != nil {
			return nil, err
		}
	}
	return json.Marshal(map[string]any{
		"type": "message",
		"attachments": []map[string]any{{
			"contentType": "application/vnd.microsoft.card.adaptive", "content": content,
		}},
	})
}

func buildAdaptiveCard(message string, b *servicetypes.TeamsWorkflowsBlock) (*adaptiveCard, error) {
	var facts, sections, actions []map[string]any
	if err := parseObjects("teams-workflows.facts", b.Facts, &facts); err != nil {
		return nil, err
	}
	if err := parseObjects("teams-workflows.sections", b.Sections, &sections); err != nil {
		return nil, err
	}
	if err := parseObjects("teams-workflows.potentialAction", b.PotentialAction, &actions); err != nil {
		return nil, err
	}
	card := &adaptiveCard{Type: "AdaptiveCard", Version: "1.4", Body: []adaptiveBlock{}}
	if b.Title != "" {
		card.Body = append(card.Body, adaptiveBlock{Type: "TextBlock", Text: b.Title, Size: "Large", Weight: "Bolder", Color: b.ThemeColor, Wrap: true})
	}
	text := message
	if b.Text != "" {
		text = b.Text
	}
	if text != "" {
		card.Body = append(card.Body, adaptiveBlock{Type: "TextBlock", Text: text, Wrap: true})
	}
	card.Body = appendFactSet(card.Body, facts)
	for _, s := range sections {
		list, _ := s["facts"].([]any)
		sf := make([]map[string]any, 0, len(list))
		for _, f := range list {
			if m, ok := f.(map[string]any); ok {
				sf = append(sf, m)
			}
		}
		card.Body = appendFactSet(card.Body, sf)
	}
	for _, a := range actions {
		if typ, _ := a["@type"].(string); typ != "OpenUri" {
			continue
		}
		act := adaptiveAction{Type: "Action.OpenUrl"}
		act.Title, _ = a["name"].(string)
		if targets, _ := a["targets"].([]any); len(targets) > 0 {
			if t, ok := targets[0].(map[string]any); ok {
				act.URL, _ = t["uri"].(string)
			}
		}
		if act.URL != "" {
			card.Actions = append(card.Actions, act)
		}
	}
	return card, nil
}

// appendFactSet adds a FactSet of the facts that have a name (a value
// that is not a string is printed as Go prints it, as Argo CD does).
func appendFactSet(body []adaptiveBlock, facts []map[string]any) []adaptiveBlock {
	set := adaptiveBlock{Type: "FactSet"}
	for _, f := range facts {
		name, ok := f["name"].(string)
		if !ok {
			continue
		}
		value := ""
		if v, ok := f["value"]; ok {
			if s, isStr := v.(string); isStr {
				value = s
			} else {
				value = fmt.Sprintf("%v", v)
			}
		}
		set.Facts = append(set.Facts, adaptiveFact{Title: name, Value: value})
	}
	if len(set.Facts) == 0 {
		return body
	}
	return append(body, set)
}
