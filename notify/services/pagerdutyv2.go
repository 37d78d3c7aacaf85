package services

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/crowsnest-dev/crowsnest/notify"
	"github.com/crowsnest-dev/crowsnest/notify/services/svc"
)

// PagerDutyV2Settings are the keys of `service.pagerdutyv2`.
type PagerDutyV2Settings struct {
	// ServiceKeys maps a recipient to the routing (integration) key of a
	// PagerDuty service's Events API v2 integration.
	ServiceKeys map[string]string `yaml:"serviceKeys" json:"serviceKeys,omitempty"`
}

// PagerDutyV2Block is a template's `pagerdutyv2:` block: the event's
// payload, and crowsnest's Action.
type PagerDutyV2Block struct {
	Summary   string `yaml:"summary" json:"summary,omitempty"`
	Severity  string `yaml:"severity" json:"severity,omitempty"`
	Source    string `yaml:"source" json:"source,omitempty"`
	Component string `yaml:"component" json:"component,omitempty"`
	Group     string `yaml:"group" json:"group,omitempty"`
	Class     string `yaml:"class" json:"class,omitempty"`
	URL       string `yaml:"url" json:"url,omitempty"`
	DedupKey  string `yaml:"dedupKey" json:"dedupKey,omitempty"`
	// Action is crowsnest's: "acknowledge" or "resolve" the alert of
	// DedupKey instead of triggering one (Argo CD only triggers).
	Action string `yaml:"action" json:"action,omitempty"`
}

// pagerDutyEventsAPI is PagerDuty's Events API v2, fixed as in Argo CD
// (tests reach a local server through svc.Options.Transport).
const pagerDutyEventsAPI = "https://events.pagerduty.com/v2/enqueue"

// pagerdutyv2Kind describes service type pagerdutyv2 (listed in services.go).
var pagerdutyv2Kind = &svc.Kind{
	Type:     "pagerdutyv2",
	Settings: func() any { return &PagerDutyV2Settings{} },
	Block:    func() any { return &PagerDutyV2Block{} },
	Validate: func(s any) error {
		if len(s.(*PagerDutyV2Settings).ServiceKeys) == 0 {
			return errors.New("serviceKeys: required (a routing key per recipient)")
		}
		return nil
	},
	New: func(name string, s any, o svc.Options) (notify.Service, error) {
		return &pagerDutyV2{c: svc.NewClient(name, false, o), s: *s.(*PagerDutyV2Settings)}, nil
	},
}

// pagerDutyV2 sends an event to the Events API v2 with the recipient's
// routing key, as Argo CD Notifications' `pagerdutyv2` service does.
type pagerDutyV2 struct {
	c *svc.Client
	s PagerDutyV2Settings
}

type pagerDutyV2Payload struct {
	Summary   string `json:"summary"`
	Source    string `json:"source"`
	Severity  string `json:"severity"`
	Component string `json:"component,omitempty"`
	Group     string `json:"group,omitempty"`
	Class     string `json:"class,omitempty"`
}

type pagerDutyV2Event struct {
	RoutingKey string              `json:"routing_key"`
	Action     string              `json:"event_action"`
	DedupKey   string              `json:"dedup_key,omitempty"`
	Client     string              `json:"client,omitempty"`
	ClientURL  string              `json:"client_url,omitempty"`
	Payload    *pagerDutyV2Payload `json:"payload,omitempty"`
}

func (p *pagerDutyV2) Send(ctx context.Context, n notify.Notification, d notify.Destination) (notify.Receipt, error) {
	key, ok := p.s.ServiceKeys[d.Recipient]
	if !ok || key == "" {
		return notify.Receipt{}, notify.Permanent(fmt.Errorf("%s: no routing key configured for recipient %q", p.c.Service, d.Recipient))
	}
	var b PagerDutyV2Block
	has, err := svc.DecodeBlock(n, "pagerdutyv2", &b)
	if err != nil {
		return notify.Receipt{}, err
	}
	if !has {
		return notify.Receipt{}, notify.Permanent(fmt.Errorf("%s: the template has no pagerdutyv2 block", p.c.Service))
	}
	ev := pagerDutyV2Event{RoutingKey: key, DedupKey: b.DedupKey}
	switch b.Action {
	case "", "trigger":
		ev.Action, ev.Client, ev.ClientURL = "trigger", "ArgoCD", b.URL
		ev.Payload = &pagerDutyV2Payload{
			Summary: b.Summary, Source: b.Source, Severity: b.Severity,
			Component: b.Component, Group: b.Group, Class: b.Class,
		}
	case "acknowledge", "resolve":
		if b.DedupKey == "" {
			return notify.Receipt{}, notify.Permanent(fmt.Errorf("%s: pagerdutyv2.action %s needs pagerdutyv2.dedupKey", p.c.Service, b.Action))
		}
		ev.Action = b.Action
	default:
		return notify.Receipt{}, notify.Permanent(fmt.Errorf("%s: pagerdutyv2.action: want trigger, acknowledge or resolve", p.c.Service))
	}
	resp, err := p.c.Do(ctx, svc.Request{Method: http.MethodPost, URL: pagerDutyEventsAPI, JSON: ev})
	if err != nil {
		return notify.Receipt{}, err
	}
	var answer struct {
		DedupKey string `json:"dedup_key"`
	}
	_ = resp.Decode(&answer)
	return notify.Receipt{ID: answer.DedupKey}, nil
}
