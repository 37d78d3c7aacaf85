package servicetypes

import "errors"

// PagerDuty is service type pagerduty (the REST API).
var PagerDuty = &Type{
	Name:     "pagerduty",
	Settings: func() Settings { return &PagerDutySettings{} },
	Block:    func() any { return &PagerDutyBlock{} },
}

// PagerDutyV2 is service type pagerdutyv2 (the Events API v2).
var PagerDutyV2 = &Type{
	Name:     "pagerdutyv2",
	Settings: func() Settings { return &PagerDutyV2Settings{} },
	Block:    func() any { return &PagerDutyV2Block{} },
}

// PagerDutySettings are the keys of `service.pagerduty`: a REST API
// token and the email of the user the incidents are created as.
type PagerDutySettings struct {
	Token string `yaml:"token" json:"token,omitempty"`
	From  string `yaml:"from" json:"from,omitempty"`
	// ServiceID is the PagerDuty service of subscriptions without a
	// recipient (Argo CD reads the recipient only).
	ServiceID string `yaml:"serviceId" json:"serviceId,omitempty"`
}

// PagerDutyBlock is a template's `pagerduty:` block.
type PagerDutyBlock struct {
	Title      string `yaml:"title" json:"title,omitempty"`
	Body       string `yaml:"body" json:"body,omitempty"`
	Urgency    string `yaml:"urgency" json:"urgency,omitempty"`
	PriorityID string `yaml:"priorityId" json:"priorityId,omitempty"`
}

// Check reports a missing token.
func (s *PagerDutySettings) Check() error { return Require("token", s.Token) }

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

// Check reports missing serviceKeys.
func (s *PagerDutyV2Settings) Check() error {
	if len(s.ServiceKeys) == 0 {
		return errors.New("serviceKeys: required (a routing key per recipient)")
	}
	return nil
}
