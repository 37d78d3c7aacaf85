package services

import (
	"context"
	"fmt"
	"net/http"

	"github.com/crowsnest-dev/crowsnest/config/servicetypes"
	"github.com/crowsnest-dev/crowsnest/notify"
	"github.com/crowsnest-dev/crowsnest/notify/services/svc"
)

// pagerDutyEventsAPI is PagerDuty's Events API v2, fixed as in Argo CD
// (tests reach a local server through svc.Options.Transport).
const pagerDutyEventsAPI = "https://events.pagerduty.com/v2/enqueue"

// pagerdutyv2Kind describes service type pagerdutyv2 (listed in services.go).
var pagerdutyv2Kind = &svc.Kind{
	Name: "pagerdutyv2",
	Type: servicetypes.PagerDutyV2,
	New: func(name string, s any, o svc.Options) (notify.Service, error) {
		return &pagerDutyV2{c: svc.NewClient(name, false, o), s: *s.(*servicetypes.PagerDutyV2Settings)}, nil
	},
}

// pagerDutyV2 sends an event to the Events API v2 with the recipient's
// routing key, as Argo CD Notifications' `pagerdutyv2` service does.
type pagerDutyV2 struct {
	c *svc.Client
	s servicetypes.PagerDutyV2Settings
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
	var b servicetypes.PagerDutyV2Block
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
