package services

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/crowsnest-dev/crowsnest/notify"
	"github.com/crowsnest-dev/crowsnest/notify/services/svc"
)

// OpsgenieSettings are the keys of `service.opsgenie`.
type OpsgenieSettings struct {
	// APIURL is the API's host, api.opsgenie.com (the default) or
	// api.eu.opsgenie.com, as Argo CD takes it; a URL with a scheme is
	// taken as is.
	APIURL string `yaml:"apiUrl" json:"apiUrl,omitempty"`
	// APIKeys maps a recipient (the team named in subscriptions) to the
	// key of that team's API integration.
	APIKeys            map[string]string `yaml:"apiKeys" json:"apiKeys,omitempty"`
	InsecureSkipVerify bool              `yaml:"insecureSkipVerify" json:"insecureSkipVerify,omitempty"`
}

// OpsgenieBlock is a template's `opsgenie:` block: the fields of the
// alert Argo CD creates, and crowsnest's Action.
type OpsgenieBlock struct {
	Description string              `yaml:"description" json:"description,omitempty"`
	Priority    string              `yaml:"priority" json:"priority,omitempty"`
	Alias       string              `yaml:"alias" json:"alias,omitempty"`
	Note        string              `yaml:"note" json:"note,omitempty"`
	Actions     []string            `yaml:"actions" json:"actions,omitempty"`
	Tags        []string            `yaml:"tags" json:"tags,omitempty"`
	Details     map[string]string   `yaml:"details" json:"details,omitempty"`
	Entity      string              `yaml:"entity" json:"entity,omitempty"`
	VisibleTo   []OpsgenieResponder `yaml:"visibleTo" json:"visibleTo,omitempty"`
	User        string              `yaml:"user" json:"user,omitempty"`
	// Action is crowsnest's: "close" or "acknowledge" closes or
	// acknowledges the open alert whose alias is Alias instead of
	// creating one (Argo CD only creates).
	Action string `yaml:"action" json:"action,omitempty"`
}

// OpsgenieResponder is a team or user an alert is visible to.
type OpsgenieResponder struct {
	Type     string `yaml:"type" json:"type,omitempty"`
	Name     string `yaml:"name" json:"name,omitempty"`
	ID       string `yaml:"id" json:"id,omitempty"`
	Username string `yaml:"username" json:"username,omitempty"`
}

// opsgenieDefaultHost is the Opsgenie SDK's default API host.
const opsgenieDefaultHost = "api.opsgenie.com"

// opsgenieSource is the alert's source, as Argo CD sets it.
const opsgenieSource = "Argo CD"

// opsgenieKind describes service type opsgenie (listed in services.go).
var opsgenieKind = &svc.Kind{
	Type:     "opsgenie",
	Settings: func() any { return &OpsgenieSettings{} },
	Block:    func() any { return &OpsgenieBlock{} },
	Validate: func(s any) error {
		o := s.(*OpsgenieSettings)
		var errs []error
		if _, err := opsgenieBaseURL(o.APIURL); err != nil {
			errs = append(errs, err)
		}
		if len(o.APIKeys) == 0 {
			errs = append(errs, errors.New("apiKeys: required (a key per recipient team)"))
		}
		return errors.Join(errs...)
	},
	New: func(name string, s any, o svc.Options) (notify.Service, error) {
		st := s.(*OpsgenieSettings)
		base, err := opsgenieBaseURL(st.APIURL)
		if err != nil {
			return nil, err
		}
		return &opsgenie{c: svc.NewClient(name, st.InsecureSkipVerify, o), s: *st, base: base}, nil
	},
}

// opsgenieBaseURL is the API's scheme and host. A bare host is called
// over https, or over http when its name lacks "api", as the Opsgenie SDK
// Argo CD uses does; a URL with a scheme is used as is.
func opsgenieBaseURL(apiURL string) (string, error) {
	if apiURL == "" {
		apiURL = opsgenieDefaultHost
	}
	if strings.Contains(apiURL, "://") {
		if err := svc.CheckURL("apiUrl", apiURL); err != nil {
			return "", err
		}
		return strings.TrimSuffix(apiURL, "/"), nil
	}
	scheme := "https"
	if !strings.Contains(apiURL, "api") {
		scheme = "http"
	}
	u, err := url.Parse(scheme + "://" + apiURL)
	if err != nil || u.Host != apiURL {
		return "", errors.New("apiUrl: want a host such as api.opsgenie.com or an http(s) URL")
	}
	return scheme + "://" + apiURL, nil
}

// opsgenie creates an alert for the recipient team with that team's API
// key, as Argo CD Notifications does.
type opsgenie struct {
	c    *svc.Client
	s    OpsgenieSettings
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
	var b OpsgenieBlock
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
func opsgenieCreate(message string, b *OpsgenieBlock, team string) opsgenieAlert {
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
