package services

import (
	"context"
	"fmt"
	"net/http"
	"net/url"

	"github.com/crowsnest-dev/crowsnest/config/servicetypes"
	"github.com/crowsnest-dev/crowsnest/notify"
	"github.com/crowsnest-dev/crowsnest/notify/services/svc"
)

// opsgenieSource is the alert's source, as Argo CD sets it.
const opsgenieSource = "Argo CD"

// opsgenieKind describes service type opsgenie (listed in services.go).
var opsgenieKind = &svc.Kind{
	Name: "opsgenie",
	Type: servicetypes.Opsgenie,
	New: func(name string, s any, o svc.Options) (notify.Service, error) {
		st := s.(*servicetypes.OpsgenieSettings)
		base, err := st.BaseURL()
		if err != nil {
			return nil, err
		}
		return &opsgenie{c: svc.NewClient(name, st.InsecureSkipVerify, o), s: *st, base: base}, nil
	},
}

// opsgenie creates an alert for the recipient team with that team's API
// key, as Argo CD Notifications does.
type opsgenie struct {
	c    *svc.Client
	s    servicetypes.OpsgenieSettings
	base string
}

// opsgenieResponder is a responder on the wire: the SDK always sends
// type and username, even empty.
type opsgenieResponder struct {
	Type     string `json:"type"`
	Name     string `json:"name,omitempty"`
	ID       string `json:"id,omitempty"`
	Username string `json:"username"`
}

// opsgenieAlert is the body of POST /v2/alerts.
type opsgenieAlert struct {
	Message     string              `json:"message"`
	Alias       string              `json:"alias,omitempty"`
	Description string              `json:"description,omitempty"`
	Responders  []opsgenieResponder `json:"responders,omitempty"`
	VisibleTo   []opsgenieResponder `json:"visibleTo,omitempty"`
	Actions     []string            `json:"actions,omitempty"`
	Tags        []string            `json:"tags,omitempty"`
	Details     map[string]string   `json:"details,omitempty"`
	Entity      string              `json:"entity,omitempty"`
	Source      string              `json:"source,omitempty"`
	Priority    string              `json:"priority,omitempty"`
	User        string              `json:"user,omitempty"`
	Note        string              `json:"note,omitempty"`
}

func (o *opsgenie) Send(ctx context.Context, n notify.Notification, d notify.Destination) (notify.Receipt, error) {
	key, ok := o.s.APIKeys[d.Recipient]
	if !ok || key == "" {
		return notify.Receipt{}, notify.Permanent(fmt.Errorf("%s: no API key configured for recipient %q", o.c.Service, d.Recipient))
	}
	var b servicetypes.OpsgenieBlock
	hasBlock, err := svc.DecodeBlock(n, "opsgenie", &b)
	if err != nil {
		return notify.Receipt{}, err
	}
	var path string
	var body any
	switch b.Action {
	case "", "create":
		if hasBlock && b.Description == "" {
			return notify.Receipt{}, notify.Permanent(fmt.Errorf("%s: opsgenie.description is required", o.c.Service))
		}
		if n.Message == "" {
			return notify.Receipt{}, notify.Permanent(fmt.Errorf("%s: the message is empty (Opsgenie requires one)", o.c.Service))
		}
		path, body = "/v2/alerts", opsgenieCreate(n.Message, &b, d.Recipient)
	case "close", "acknowledge":
		if b.Alias == "" {
			return notify.Receipt{}, notify.Permanent(fmt.Errorf("%s: opsgenie.action %s needs opsgenie.alias", o.c.Service, b.Action))
		}
		path = "/v2/alerts/" + url.PathEscape(b.Alias) + "/" + b.Action + "?identifierType=alias"
		body = struct {
			Source string `json:"source"`
			User   string `json:"user,omitempty"`
			Note   string `json:"note,omitempty"`
		}{opsgenieSource, b.User, b.Note}
	default:
		return notify.Receipt{}, notify.Permanent(fmt.Errorf("%s: opsgenie.action: want create, close or acknowledge", o.c.Service))
	}
	resp, err := o.c.Do(ctx, svc.Request{
		Method: http.MethodPost,
		URL:    o.base + path,
		Header: http.Header{
			"Authorization": {"GenieKey " + key},
			"Accept":        {"application/json"},
			"Content-Type":  {"application/json; charset=utf-8"},
		},
		JSON: body,
	})
	if err != nil {
		return notify.Receipt{}, err
	}
	var answer struct {
		RequestID string `json:"requestId"`
	}
	_ = resp.Decode(&answer)
	return notify.Receipt{ID: answer.RequestID}, nil
}

// opsgenieCreate is the alert Argo CD creates: the message, the block's
// fields, the recipient team as responder and "Argo CD" as source.
func opsgenieCreate(message string, b *servicetypes.OpsgenieBlock, team string) opsgenieAlert {
	a := opsgenieAlert{
		Message: message, Description: b.Description, Priority: b.Priority, Alias: b.Alias,
		Note: b.Note, Entity: b.Entity, User: b.User, Source: opsgenieSource,
		Responders: []opsgenieResponder{{Type: "team", ID: team}},
	}
	if len(b.Actions) > 0 {
		a.Actions = b.Actions
	}
	if len(b.Tags) > 0 {
		a.Tags = b.Tags
	}
	if len(b.Details) > 0 {
		a.Details = b.Details
	}
	for _, r := range b.VisibleTo {
		a.VisibleTo = append(a.VisibleTo, opsgenieResponder(r))
	}
	return a
}
