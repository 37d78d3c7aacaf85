package services

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"

	"sigs.k8s.io/yaml"

	"github.com/crowsnest-dev/crowsnest/config/servicetypes"
	"github.com/crowsnest-dev/crowsnest/notify"
	"github.com/crowsnest-dev/crowsnest/notify/services/svc"
)

// googlechatKind describes service type googlechat (listed in services.go).
var googlechatKind = &svc.Kind{
	Name: "googlechat",
	Type: servicetypes.GoogleChat,
	New: func(name string, s any, o svc.Options) (notify.Service, error) {
		g := s.(*servicetypes.GoogleChatSettings)
		return &googleChat{c: svc.NewClient(name, g.InsecureSkipVerify, o), urls: g.Webhooks}, nil
	},
}

// googleChat posts to a space's incoming webhook.
type googleChat struct {
	c    *svc.Client
	urls map[string]string
}

func (g *googleChat) Send(ctx context.Context, n notify.Notification, d notify.Destination) (notify.Receipt, error) {
	u, err := svc.RecipientURL(g.c, "webhooks", g.urls, d)
	if err != nil {
		return notify.Receipt{}, err
	}
	var b servicetypes.GoogleChatBlock
	if _, err := svc.DecodeBlock(n, "googlechat", &b); err != nil {
		return notify.Receipt{}, err
	}
	msg, err := googleChatMessage(n.Message, &b)
	if err != nil {
		return notify.Receipt{}, notify.Permanent(fmt.Errorf("%s: %w", g.c.Service, err))
	}
	if b.ThreadKey != "" {
		pu, err := url.Parse(u)
		if err != nil {
			return notify.Receipt{}, notify.Permanent(fmt.Errorf("%s: webhook of recipient %q is not a URL", g.c.Service, d.Recipient))
		}
		q := pu.Query()
		q.Add("threadKey", b.ThreadKey)
		q.Add("messageReplyOption", "REPLY_MESSAGE_FALLBACK_TO_NEW_THREAD")
		pu.RawQuery = q.Encode()
		u = pu.String()
	}
	resp, err := g.c.Do(ctx, svc.Request{Method: http.MethodPost, URL: u, JSON: msg})
	if err != nil {
		return notify.Receipt{}, err
	}
	// As Argo CD: the answer is a JSON message, or an error in JSON.
	var answer struct {
		Name  string `json:"name"`
		Error *struct {
			Code    int    `json:"code"`
			Status  string `json:"status"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := resp.Decode(&answer); err != nil {
		return notify.Receipt{}, notify.Permanent(fmt.Errorf("%s: webhook answered %d, not JSON", g.c.Service, resp.Status))
	}
	if e := answer.Error; e != nil {
		return notify.Receipt{}, notify.Permanent(fmt.Errorf("%s: webhook answered error %d %s: %.300s", g.c.Service, e.Code, e.Status, e.Message))
	}
	return notify.Receipt{ID: answer.Name}, nil
}

// googleChatMessage is the webhook's body: the message as text, or the
// block's cards (text then empty, as Argo CD sends it). CardsV2 entries
// get a random cardId as Argo CD gives them.
func googleChatMessage(message string, b *servicetypes.GoogleChatBlock) (map[string]any, error) {
	msg := map[string]any{"text": message}
	if b.Cards == "" && b.CardsV2 == "" {
		return msg, nil
	}
	msg["text"] = ""
	if b.CardsV2 != "" {
		cards, err := googleChatCards("cardsV2", b.CardsV2)
		if err != nil {
			return nil, err
		}
		withIDs := make([]any, len(cards))
		for i, c := range cards {
			withIDs[i] = map[string]any{"cardId": newUUID(), "card": c}
		}
		if len(withIDs) > 0 {
			msg["cardsV2"] = withIDs
		}
	}
	if b.Cards != "" {
		cards, err := googleChatCards("cards", b.Cards)
		if err != nil {
			return nil, err
		}
		if len(cards) > 0 {
			msg["cards"] = cards
		}
	}
	return msg, nil
}

// googleChatCards reads a YAML or JSON list of cards. Argo CD reads them
// into the Chat API's Go types, whose JSON leaves out empty values: so
// does this, keeping objects (the Go types' pointers) even when empty.
func googleChatCards(key, text string) ([]any, error) {
	j, err := yaml.YAMLToJSON([]byte(text))
	if err != nil {
		return nil, fmt.Errorf("googlechat.%s: not YAML: %w", key, err)
	}
	var cards []any
	if err := json.Unmarshal(j, &cards); err != nil {
		return nil, fmt.Errorf("googlechat.%s: not a list of cards: %w", key, err)
	}
	for i := range cards {
		cards[i] = dropEmpty(cards[i])
		if cards[i] == nil {
			cards[i] = map[string]any{}
		}
	}
	return cards, nil
}

// dropEmpty removes what Go's omitempty leaves out: null, false, 0, ""
// and empty lists, in objects; objects are kept.
func dropEmpty(v any) any {
	switch t := v.(type) {
	case map[string]any:
		for k, e := range t {
			e = dropEmpty(e)
			if isEmptyJSON(e) {
				delete(t, k)
				continue
			}
			t[k] = e
		}
		return t
	case []any:
		for i := range t {
			t[i] = dropEmpty(t[i])
		}
		return t
	}
	return v
}

func isEmptyJSON(v any) bool {
	switch t := v.(type) {
	case nil:
		return true
	case bool:
		return !t
	case float64:
		return t == 0
	case string:
		return t == ""
	case []any:
		return len(t) == 0
	}
	return false
}

// newUUID is a random (version 4) UUID.
func newUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}
