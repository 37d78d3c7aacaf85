package services

import (
	"context"
	"fmt"
	"net/http"

	"github.com/crowsnest-dev/crowsnest/config/servicetypes"
	"github.com/crowsnest-dev/crowsnest/notify"
	"github.com/crowsnest-dev/crowsnest/notify/services/svc"
)

// pagerDutyAPI is PagerDuty's REST API, fixed as in Argo CD (tests reach
// a local server through svc.Options.Transport).
const pagerDutyAPI = "https://api.pagerduty.com"

// pagerdutyKind describes service type pagerduty (listed in services.go).
var pagerdutyKind = &svc.Kind{
	Name: "pagerduty",
	Type: servicetypes.PagerDuty,
	New: func(name string, s any, o svc.Options) (notify.Service, error) {
		return &pagerDuty{c: svc.NewClient(name, false, o), s: *s.(*servicetypes.PagerDutySettings)}, nil
	},
	DefaultRecipient: true,
}

// pagerDuty creates an incident on the service named by the recipient,
// as Argo CD Notifications' `pagerduty` service does.
type pagerDuty struct {
	c *svc.Client
	s servicetypes.PagerDutySettings
}

type pagerDutyRef struct {
	ID   string `json:"id,omitempty"`
	Type string `json:"type,omitempty"`
}

type pagerDutyDetails struct {
	Type    string `json:"type,omitempty"`
	Details string `json:"details,omitempty"`
}

type pagerDutyIncident struct {
	Type     string            `json:"type"`
	Title    string            `json:"title"`
	Service  *pagerDutyRef     `json:"service"`
	Priority *pagerDutyRef     `json:"priority"`
	Urgency  string            `json:"urgency,omitempty"`
	Body     *pagerDutyDetails `json:"body,omitempty"`
}

// pagerDutyBodyType is the incident body's type exactly as Argo CD sends
// it, with its trailing tab, so an incident reads the same.
const pagerDutyBodyType = "incident_details\t"

func (p *pagerDuty) Send(ctx context.Context, n notify.Notification, d notify.Destination) (notify.Receipt, error) {
	var b servicetypes.PagerDutyBlock
	ok, err := svc.DecodeBlock(n, "pagerduty", &b)
	if err != nil {
		return notify.Receipt{}, err
	}
	if !ok {
		return notify.Receipt{}, notify.Permanent(fmt.Errorf("%s: the template has no pagerduty block", p.c.Service))
	}
	service := d.Recipient
	if service == "" {
		service = p.s.ServiceID
	}
	if service == "" {
		return notify.Receipt{}, notify.Permanent(fmt.Errorf("%s: no PagerDuty service ID: name it as the recipient or in serviceId", p.c.Service))
	}
	resp, err := p.c.Do(ctx, svc.Request{
		Method: http.MethodPost,
		URL:    pagerDutyAPI + "/incidents",
		Header: http.Header{
			"Authorization": {"Token token=" + p.s.Token},
			"From":          {p.s.From},
			"Accept":        {"application/vnd.pagerduty+json;version=2"},
		},
		JSON: map[string]pagerDutyIncident{"incident": {
			Type:     "incident",
			Title:    b.Title,
			Service:  &pagerDutyRef{ID: service, Type: "service_reference"},
			Priority: &pagerDutyRef{ID: b.PriorityID, Type: "priority"},
			Urgency:  b.Urgency,
			Body:     &pagerDutyDetails{Type: pagerDutyBodyType, Details: b.Body},
		}},
	})
	if err != nil {
		return notify.Receipt{}, err
	}
	var created struct {
		Incident struct {
			ID string `json:"id"`
		} `json:"incident"`
	}
	_ = resp.Decode(&created)
	return notify.Receipt{ID: created.Incident.ID}, nil
}
